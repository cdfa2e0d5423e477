// Package store is the flow's sink into the store: one adapter from
// flow.Sink to *store.Store, used by the server and by `sluice ingest`.
// It decides nothing: admission and counting are the flow's, encoding
// and durability the store's.
package store

import (
	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// Sink writes batches to a store.
//
// Concurrency: safe for concurrent use, as the store is; Prepare may run
// on many goroutines at once.
type Sink struct{ st *store.Store }

// New returns the sink of st.
func New(st *store.Store) Sink { return Sink{st: st} }

// Prepare encodes the kept records of b for its tenant, b.Tenant
// (store.Store.Prepare); b may be reused once it returns.
func (s Sink) Prepare(b *record.Batch) (flow.Pending, error) {
	p, err := s.st.Prepare(b.Tenant, b)
	if err != nil {
		// Not p: a nil *store.Pending in a flow.Pending is not nil.
		return nil, err
	}
	return p, nil
}
