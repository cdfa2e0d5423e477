package flow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicelog/sluice/internal/record"
)

// memSink keeps what it is given; fail, if set, is its error.
type memSink struct {
	tenants []string
	lines   []int
	fail    error
}

type memPending struct {
	s     *memSink
	t     string
	n     int
	wrote bool
}

func (s *memSink) Prepare(b *record.Batch) (Pending, error) {
	return &memPending{s: s, t: b.Tenant, n: len(b.Records)}, nil
}

func (p *memPending) Write(ctx context.Context) { p.wrote = true }

func (p *memPending) Wait() error {
	if !p.wrote {
		return errors.New("wait without write")
	}
	if p.s.fail != nil {
		return p.s.fail
	}
	p.s.tenants = append(p.s.tenants, p.t)
	p.s.lines = append(p.s.lines, p.n)
	return nil
}

// oddOut refuses the records at odd indexes (or, whole, everything when
// there is one).
type oddOut struct{}

func (oddOut) Admit(b *record.Batch, whole bool, refused func(i int)) Refusal {
	n := len(b.Records) / 2
	if n == 0 {
		return Refusal{}
	}
	if whole {
		return Refusal{Lines: len(b.Records), Reason: "odd", Message: "odd records"}
	}
	kept := b.Records[:0]
	for i, r := range b.Records {
		if i%2 == 0 {
			kept = append(kept, r)
		} else if refused != nil {
			refused(i)
		}
	}
	b.Records = kept
	return Refusal{Lines: n, Reason: "odd", Message: "odd records"}
}

func newFlow(s Sink) *Flow {
	return &Flow{Sink: s, Admission: oddOut{}, Metrics: Metrics{
		Lines:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "l"}, []string{"tenant", "protocol"}),
		Bytes:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b"}, []string{"tenant", "protocol"}),
		Rejected:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "r"}, []string{"protocol", "reason"}),
		TimeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t"}, []string{"protocol"}),
	}}
}

// batch returns a batch of tenant t1 with n records, one rejected line
// and one time fallback, over 100 bytes of data.
func batch(n int) *record.Batch {
	return &record.Batch{
		Tenant:  "t1",
		Data:    make([]byte, 100),
		Records: make([]record.Record, n),
		Errors:  []record.LineError{{Line: 1, Kind: record.ErrSyntax, Msg: "bad"}},
		BadTime: 1,
	}
}

func TestWriteCountsOnce(t *testing.T) {
	s := &memSink{}
	f := newFlow(s)
	var refused []int
	in := Input{Protocol: "p", Refused: func(i int) { refused = append(refused, i) }}
	res, err := f.Write(context.Background(), in, batch(4))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Accepted: 2, Rejected: 3, Refused: 2, Message: "odd records", TimeFallbacks: 1}
	if res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if len(refused) != 2 || refused[0] != 1 || refused[1] != 3 {
		t.Errorf("refused indexes %v, want [1 3]", refused)
	}
	if len(s.lines) != 1 || s.lines[0] != 2 || s.tenants[0] != "t1" {
		t.Errorf("sink got %v lines for %v, want [2] for [t1]", s.lines, s.tenants)
	}
	m := f.Metrics
	for name, got := range map[string]float64{
		"lines":         testutil.ToFloat64(m.Lines.WithLabelValues("t1", "p")),
		"bytes":         testutil.ToFloat64(m.Bytes.WithLabelValues("t1", "p")),
		"syntax":        testutil.ToFloat64(m.Rejected.WithLabelValues("p", record.ErrSyntax.String())),
		"odd":           testutil.ToFloat64(m.Rejected.WithLabelValues("p", "odd")),
		"timeFallbacks": testutil.ToFloat64(m.TimeFallbacks.WithLabelValues("p")),
	} {
		want := map[string]float64{"lines": 2, "bytes": 100, "syntax": 1, "odd": 2, "timeFallbacks": 1}[name]
		if got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
}

func TestWriteWholeRefusedStoresNothing(t *testing.T) {
	s := &memSink{}
	f := newFlow(s)
	res, err := f.Write(context.Background(), Input{Protocol: "p", Whole: true, Bytes: 7}, batch(2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 0 || res.Refused != 2 || res.Rejected != 3 {
		t.Errorf("result %+v, want 0 accepted, 2 refused, 3 rejected", res)
	}
	if len(s.lines) != 0 {
		t.Errorf("sink got %v, want nothing", s.lines)
	}
	if got := testutil.ToFloat64(f.Metrics.TimeFallbacks.WithLabelValues("p")); got != 0 {
		t.Errorf("time fallbacks of a refused push counted: %g", got)
	}
	// Admitted whole: the bytes counted are the input's.
	if _, err := f.Write(context.Background(), Input{Protocol: "p", Whole: true, Bytes: 7}, batch(1)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(f.Metrics.Bytes.WithLabelValues("t1", "p")); got != 7 {
		t.Errorf("bytes = %g, want 7", got)
	}
}

func TestWriteSinkErrorCountsNoLines(t *testing.T) {
	full := errors.New("disk full")
	f := newFlow(&memSink{fail: full})
	res, err := f.Write(context.Background(), Input{Protocol: "p"}, batch(1))
	if !errors.Is(err, full) {
		t.Fatalf("err %v, want %v", err, full)
	}
	if res.Accepted != 0 {
		t.Errorf("accepted %d of a failed write", res.Accepted)
	}
	if got := testutil.ToFloat64(f.Metrics.Lines.WithLabelValues("t1", "p")); got != 0 {
		t.Errorf("lines = %g after a failed write", got)
	}
}

func TestNilAdmissionAndMetrics(t *testing.T) {
	s := &memSink{}
	f := &Flow{Sink: s}
	res, err := f.Write(context.Background(), Input{Protocol: "p"}, batch(3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 3 || res.Rejected != 1 {
		t.Errorf("result %+v, want 3 accepted, 1 rejected", res)
	}
}

// admitCalls counts its calls and admits everything.
type admitCalls struct{ n int }

func (a *admitCalls) Admit(b *record.Batch, whole bool, refused func(i int)) Refusal {
	a.n++
	return Refusal{}
}

// TestNoTenantRefused: a batch without a tenant is refused by every way
// into the sink, with ErrNoTenant; no admission sees it, nothing is
// stored or counted as stored.
func TestNoTenantRefused(t *testing.T) {
	s := &memSink{}
	f := newFlow(s)
	adm := &admitCalls{}
	f.Admission = adm
	in := Input{Protocol: "p"}
	noTenant := func() *record.Batch { b := batch(2); b.Tenant = ""; return b }
	if res, err := f.Write(context.Background(), in, noTenant()); !errors.Is(err, ErrNoTenant) || res.Accepted != 0 {
		t.Errorf("Write: %+v, %v, want %v", res, err, ErrNoTenant)
	}
	if _, err := f.Store(context.Background(), in, noTenant()); !errors.Is(err, ErrNoTenant) {
		t.Errorf("Store: %v, want %v", err, ErrNoTenant)
	}
	p, err := f.Prepare(in, noTenant())
	if !errors.Is(err, ErrNoTenant) || p != nil {
		t.Errorf("Prepare: %v, %v, want %v", p, err, ErrNoTenant)
	}
	if err != nil && !strings.Contains(err.Error(), "p batch of 2 records") {
		t.Errorf("error %q does not say which batch", err)
	}
	if adm.n != 0 {
		t.Errorf("admission saw %d batches without a tenant", adm.n)
	}
	if len(s.lines) != 0 {
		t.Errorf("sink got %v", s.lines)
	}
	if got := testutil.ToFloat64(f.Metrics.Lines.WithLabelValues("", "p")); got != 0 {
		t.Errorf("lines = %g for no tenant", got)
	}
}

// dropFirst is a rule stage that drops record 0 and notes the order of
// the steps it sees.
type dropFirst struct{ order *[]string }

func (d dropFirst) Apply(b *record.Batch) {
	*d.order = append(*d.order, "rules")
	b.Drop(0)
}

type noteAdmission struct{ order *[]string }

func (n noteAdmission) Admit(b *record.Batch, whole bool, refused func(i int)) Refusal {
	*n.order = append(*n.order, "admission")
	if b.Kept(0) {
		*n.order = append(*n.order, "record 0 still kept")
	}
	return Refusal{}
}

func TestRulesRunBeforeAdmission(t *testing.T) {
	var order []string
	s := &memSink{}
	f := &Flow{Sink: s, Admission: noteAdmission{&order}, Rules: dropFirst{&order}}
	b := &record.Batch{Tenant: "t", Records: make([]record.Record, 3)}
	res, err := f.Write(context.Background(), Input{Protocol: "test"}, b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "rules,admission" {
		t.Errorf("steps %q, want rules then admission, record 0 dropped before admission", order)
	}
	// What rules drop is neither accepted nor rejected.
	if res.Accepted != 2 || res.Rejected != 0 || res.Refused != 0 {
		t.Errorf("result %+v, want 2 accepted", res)
	}
	// A batch without a tenant reaches no rules.
	order = nil
	f.Admit(Input{Protocol: "test"}, &record.Batch{Records: make([]record.Record, 1)})
	if len(order) != 0 {
		t.Errorf("a batch without a tenant went through %q", order)
	}
}
