package query

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// A multi-tenant query (Loki's X-Scope-OrgID: a|b) reads the streams of
// every tenant named, each with the label TenantLabel set to its tenant,
// as Loki's multi-tenant querier does: a selector can match on it
// ({__tenant_id__="a"}), an aggregation can group by it, and results of
// different tenants with the same labels stay apart. A stream that has a
// label of that name keeps it as OriginalTenantLabel.
//
// INVARIANT: the query reads only the tenants named, which the caller
// has checked the request may read; a stream is always scanned in its
// own tenant.
const (
	TenantLabel         = "__tenant_id__"
	OriginalTenantLabel = "original_" + TenantLabel
)

// WithTenant returns a copy of ls with TenantLabel set to tenant, its own
// TenantLabel (if any) renamed OriginalTenantLabel; the result is sorted
// by name, as every label set.
func WithTenant(ls record.Labels, tenant string) record.Labels {
	out := make(record.Labels, 0, len(ls)+2)
	for _, l := range ls {
		switch l.Name {
		case TenantLabel:
			out = append(out, record.Label{Name: OriginalTenantLabel, Value: l.Value})
		case OriginalTenantLabel:
			// replaced by the renamed label, if any, below
			if _, ok := ls.Get(TenantLabel); !ok {
				out = append(out, l)
			}
		default:
			out = append(out, l)
		}
	}
	out = append(out, record.Label{Name: TenantLabel, Value: tenant})
	slices.SortFunc(out, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// multiSource is a Source over several tenants as one: its streams are
// every tenant's, labelled WithTenant, and a scan of one goes to the
// tenant it came from with its own labels.
//
// Concurrency: safe for concurrent use, as a Source is.
type multiSource struct {
	src     Source
	tenants []string

	mu     sync.Mutex
	origin map[string]tenantStream // by the labelled set's key
}

type tenantStream struct {
	tenant string
	stream store.Stream
}

func newMultiSource(src Source, tenants []string) *multiSource {
	return &multiSource{src: src, tenants: tenants, origin: map[string]tenantStream{}}
}

// Streams returns every tenant's streams with rows in [from, to]; the
// tenant argument (the query's, the tenants joined by |) is not read.
func (m *multiSource) Streams(_ string, from, to int64) []store.Stream {
	var out []store.Stream
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tenants {
		for _, st := range m.src.Streams(t, from, to) {
			l := store.StreamOf(WithTenant(st.Labels, t))
			m.origin[l.Key] = tenantStream{t, st}
			out = append(out, l)
		}
	}
	return out
}

func (m *multiSource) resolve(stream store.Stream) (tenantStream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts, ok := m.origin[stream.Key]
	if !ok {
		return ts, fmt.Errorf("multi-tenant query: stream %s was not listed by Streams", stream)
	}
	return ts, nil
}

func (m *multiSource) Scan(ctx context.Context, _ string, stream store.Stream, from, to int64, opts store.ScanOptions, fn store.RowFunc) error {
	ts, err := m.resolve(stream)
	if err != nil {
		return err
	}
	return m.src.Scan(ctx, ts.tenant, ts.stream, from, to, opts, fn)
}

func (m *multiSource) ScanColumns(ctx context.Context, _ string, stream store.Stream, from, to int64, shard store.Shard, order store.Order, blockFn store.BlockFunc, metaOK store.MetaFunc, rowFn store.RowFunc) error {
	ts, err := m.resolve(stream)
	if err != nil {
		return err
	}
	return m.src.ScanColumns(ctx, ts.tenant, ts.stream, from, to, shard, order, blockFn, metaOK, rowFn)
}

// StreamNewest is the tenant's source's, when it tells (streamNewest).
func (m *multiSource) StreamNewest(_ string, key string, from, to int64) (int64, bool) {
	src, ok := m.src.(streamNewest)
	if !ok {
		return 0, false
	}
	ts, err := m.resolve(store.Stream{Key: key})
	if err != nil {
		return 0, false
	}
	return src.StreamNewest(ts.tenant, ts.stream.Key, from, to)
}
