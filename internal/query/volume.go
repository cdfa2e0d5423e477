package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store"
)

// VolumeParams are a volume request's, as Loki's /index/volume and
// /index/volume_range take them.
type VolumeParams struct {
	Tenant string
	// Selector selects the streams; nil selects every stream (Loki's
	// "{}"), and then every label aggregates.
	Selector   logql.Selector
	Start, End int64
	// Step cuts [Start, End] into buckets aligned on multiples of Step,
	// as Loki's volume_range does; zero gives one bucket (/index/volume).
	Step time.Duration
	// Limit keeps the Limit largest series of each bucket.
	Limit int
	// TargetLabels, when set, are the labels series aggregate into;
	// otherwise those the selector names.
	TargetLabels []string
	// ByLabels aggregates by label name (aggregateBy=labels) rather than
	// by label-value pairs (series).
	ByLabels bool
	// MaxSeries bounds the distinct series before the limit cuts them
	// (Loki's volume_max_series); zero means DefaultVolumeMaxSeries.
	MaxSeries int
}

// DefaultVolumeMaxSeries is Loki's default volume_max_series.
const DefaultVolumeMaxSeries = 1000

// VolumeSeries is one series of a volume answer: the bytes of the lines of
// its streams per bucket, at the bucket's time (its end, as Loki's).
type VolumeSeries struct {
	Labels record.Labels
	Points []Point
}

// volumeBuckets are the buckets of a volume request.
type volumeBuckets struct {
	first, step int64 // aligned start and width; step 0: one bucket
	times       []int64
}

// newVolumeBuckets cuts [start, end] as Loki's util.ForInterval does with
// its end inclusive: buckets aligned on multiples of step, each stamped
// with its end less a millisecond, the last with end itself.
func newVolumeBuckets(start, end int64, step time.Duration) volumeBuckets {
	if step <= 0 {
		return volumeBuckets{times: []int64{end}}
	}
	s := int64(step)
	b := volumeBuckets{first: start - mod(start, s), step: s}
	for t := b.first; t < end; t += s {
		e := t + s
		if e >= end {
			e = end
		} else {
			e -= int64(time.Millisecond)
		}
		b.times = append(b.times, e)
	}
	if len(b.times) == 0 {
		b.times = []int64{end}
	}
	return b
}

func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}

// index returns the bucket of a row's time.
func (b *volumeBuckets) index(t int64) int {
	if b.step == 0 {
		return 0
	}
	return min(max(int((t-b.first)/b.step), 0), len(b.times)-1)
}

// Volume returns the bytes of the lines of the selected streams in
// [Start, End], aggregated as Loki's volume endpoints aggregate them,
// largest first. Bytes are the lines' exact lengths, read from the store
// (Loki counts its chunks' kilobytes from its index).
func (e *Engine) Volume(ctx context.Context, src Source, p VolumeParams) ([]VolumeSeries, error) {
	ctx, cancel := e.timeout(ctx)
	defer cancel()
	if p.End < p.Start {
		return nil, fmt.Errorf("%w: the end time is before the start time", ErrBadRequest)
	}
	maxSeries := p.MaxSeries
	if maxSeries <= 0 {
		maxSeries = DefaultVolumeMaxSeries
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	// The labels series aggregate into, as Loki's
	// util.PrepareLabelsAndMatchers: the targets (each of which a stream
	// must have, unless the selector names it), or the labels the
	// selector names, or every label for "{}".
	includeAll := p.Selector == nil && len(p.TargetLabels) == 0
	into := map[string]bool{}
	var must []string
	for _, t := range p.TargetLabels {
		into[t] = true
		if !slices.ContainsFunc(p.Selector, func(m *logql.Matcher) bool { return m.Name == t }) {
			must = append(must, t)
		}
	}
	if len(p.TargetLabels) == 0 {
		for _, m := range p.Selector {
			into[m.Name] = true
		}
	}
	var streams []store.Stream
	for _, st := range src.Streams(p.Tenant, p.Start, p.End) {
		if !p.Selector.Matches(st.Labels.Value) {
			continue
		}
		if slices.ContainsFunc(must, func(n string) bool { return st.Labels.Value(n) == "" }) {
			continue
		}
		streams = append(streams, st)
	}
	buckets := newVolumeBuckets(p.Start, p.End, p.Step)
	ev := &evaluator{e: e, src: src, p: Params{Tenant: p.Tenant, Start: p.Start, End: p.End}}
	setup := func() (*volumeWorker, error) { return &volumeWorker{series: map[string]*volumeAcc{}}, nil }
	opts := store.ScanOptions{LinesOnly: true}
	workers, err := forStreams(ctx, ev, streams, setup, func(ctx context.Context, w *volumeWorker, st store.Stream) error {
		ls := st.Labels
		sums := make([]int64, len(buckets.times))
		seen := make([]bool, len(buckets.times))
		err := ev.src.Scan(ctx, p.Tenant, st, p.Start, p.End, opts, func(r *rows.Row, _ []string) error {
			if err := ev.scanned(&w.tally, r.Line); err != nil {
				return err
			}
			i := buckets.index(r.Time)
			sums[i] += int64(len(r.Line))
			seen[i] = true
			return nil
		})
		if ferr := ev.flush(&w.tally); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
		if p.ByLabels {
			for _, l := range ls {
				if len(p.TargetLabels) == 0 || into[l.Name] {
					w.add(l.Name, record.Labels{{Name: l.Name}}, sums, seen)
				}
			}
			return nil
		}
		var out record.Labels
		for _, l := range ls {
			if includeAll || into[l.Name] {
				out = append(out, l)
			}
		}
		w.add(out.String(), out, sums, seen)
		return nil
	})
	if err != nil {
		return nil, e.timeoutErr(err)
	}
	all := map[string]*volumeAcc{}
	for _, w := range workers {
		for k, a := range w.series {
			if b := all[k]; b != nil {
				for i, v := range a.sums {
					b.sums[i] += v
					b.seen[i] = b.seen[i] || a.seen[i]
				}
			} else {
				all[k] = a
			}
		}
	}
	if len(all) > maxSeries {
		return nil, fmt.Errorf("%w: the query hit the max number of series limit (limit: %d series)", ErrLimit, maxSeries)
	}
	// Each bucket keeps its limit largest series, as each of Loki's
	// per-bucket requests does.
	accs := make([]*volumeAcc, 0, len(all))
	for k, a := range all {
		a.key = k
		accs = append(accs, a)
	}
	kept := map[*volumeAcc][]Point{}
	for i, t := range buckets.times {
		var in []*volumeAcc
		for _, a := range accs {
			if a.seen[i] {
				in = append(in, a)
			}
		}
		slices.SortFunc(in, func(a, b *volumeAcc) int {
			return cmp.Or(cmp.Compare(b.sums[i], a.sums[i]), strings.Compare(a.key, b.key))
		})
		for _, a := range in[:min(len(in), limit)] {
			kept[a] = append(kept[a], Point{Time: t, Value: float64(a.sums[i])})
		}
	}
	out := make([]VolumeSeries, 0, len(kept))
	type keyed struct {
		VolumeSeries
		key string
	}
	var ks []keyed
	for a, pts := range kept {
		ks = append(ks, keyed{VolumeSeries{Labels: a.labels, Points: pts}, a.key})
	}
	// As Loki: by the first point's value, largest first, then by name.
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(b.Points[0].Value, a.Points[0].Value), strings.Compare(a.key, b.key))
	})
	for _, k := range ks {
		out = append(out, k.VolumeSeries)
	}
	return out, nil
}

// volumeAcc sums one series' bytes per bucket.
type volumeAcc struct {
	key    string
	labels record.Labels
	sums   []int64
	seen   []bool // a stream of the series had rows in the bucket
}

// volumeWorker is one worker's share of a volume request.
type volumeWorker struct {
	tally  tally
	series map[string]*volumeAcc
}

// add adds one stream's sums to a series; a bucket where the stream had
// rows (seen) gives the series a point there.
func (w *volumeWorker) add(key string, ls record.Labels, sums []int64, seen []bool) {
	a := w.series[key]
	if a == nil {
		a = &volumeAcc{labels: ls, sums: make([]int64, len(sums)), seen: make([]bool, len(sums))}
		w.series[key] = a
	}
	for i, v := range sums {
		a.sums[i] += v
		a.seen[i] = a.seen[i] || seen[i]
	}
}
