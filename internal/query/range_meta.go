package query

import (
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store/part"
)

// A count of every row of a stream by labels the stream has not, which
// its rows may have as structured metadata (Grafana's volume by level,
// `sum by (detected_level) (count_over_time({service_name="x"} [1m]))`
// on what Loki's push API took with its detected levels), needs no line:
// metaCount reads the metadata's columns alone and gives each row the
// labels the row path would (its stream's, then its metadata as
// stage.Labels.SetMeta sets them), where the row path rebuilt every row
// of the block whole.

// metaCounter is a worker's state for metaCount.
type metaCounter struct {
	slots []int // the metadata slots of the block's templates, end to end
	at    []int // template t's are slots[at[t]:at[t+1]]
	keep  []bool
	cur   part.Cursor
	buf   []byte
	// The series of the block's rows whose labels are the stream's and
	// one metadata string without flags from a dictionary: by column,
	// then by the value's id (memo[col][id], nil: not yet known); none
	// the stream's alone (no metadata).
	memo [][256]*rangeSeries
	none *rangeSeries
}

// metaCountable is the store.MetaFunc of metaCount: it takes a block
// whose templates say which of their slots are metadata (every one but
// a raw template with fields held apart, whose rows tell it row by row).
func metaCountable(b *part.Block) bool {
	var buf [8]int
	for t := range b.NumTemplates() {
		if _, ok := b.MetaSlots(t, buf[:0]); !ok {
			return false
		}
	}
	return true
}

// metaCount adds each row of block b in [from, to] to the series of its
// labels: the stream's and its structured metadata's. The range
// aggregation counts rows (countsAll: no pipeline, no unwrap), and
// metaCountable took the block.
func (w *rangeWorker) metaCount(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) error {
	if len(b.MetaColumns()) == 0 {
		return w.countTimes(ev, ls, b, from, to)
	}
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	if w.meta == nil {
		w.meta = &metaCounter{}
	}
	mc := w.meta
	mc.slots, mc.at = mc.slots[:0], mc.at[:0]
	for t := range b.NumTemplates() {
		mc.at = append(mc.at, len(mc.slots))
		mc.slots, _ = b.MetaSlots(t, mc.slots)
	}
	mc.at = append(mc.at, len(mc.slots))
	mc.keep = append(mc.keep[:0], make([]bool, b.NumColumns())...)
	for _, c := range b.MetaColumns() {
		mc.keep[c] = true
	}
	mc.cur.Start(b, mc.keep)
	if cap(mc.memo) < b.NumColumns() {
		mc.memo = make([][256]*rangeSeries, b.NumColumns())
	}
	mc.memo = mc.memo[:b.NumColumns()]
	for _, c := range b.MetaColumns() {
		clear(mc.memo[c][:]) // a dictionary's ids are the block's
	}
	mc.none = nil
	for k := range b.NumRows() {
		tm := b.RowTemplate(k)
		if t := b.RowTime(k); t >= from && t <= to {
			if err := ev.scanned(&w.tally, nil); err != nil {
				return err
			}
			w.tally.columnar++
			// Rows whose labels are the stream's and at most one
			// metadata string from a dictionary share their series.
			var memo **rangeSeries
			switch slots := mc.slots[mc.at[tm]:mc.at[tm+1]]; len(slots) {
			case 0:
				memo = &mc.none
			case 1:
				col := b.SlotColumn(tm, slots[0])
				vi := mc.cur.At(col) + b.SlotRank(tm, slots[0])
				if id := b.ValueID(col, vi); id >= 0 {
					_, _, kind, flags, err := b.ValueMeta(col, vi, t, mc.buf[:0])
					if err != nil {
						return err
					}
					if kind == record.String && flags == 0 {
						memo = &mc.memo[col][id]
					}
				}
			}
			if memo != nil && *memo != nil {
				w.add(*memo, t, 1)
				mc.cur.Next(tm)
				continue
			}
			w.lb.Reset(ls)
			// One buffer for the row's values: each label's value stays
			// as it is until the next row's Reset (SetMeta's promise).
			buf := mc.buf[:0]
			for _, s := range mc.slots[mc.at[tm]:mc.at[tm+1]] {
				col := b.SlotColumn(tm, s)
				var v []byte
				var kind record.Kind
				var flags record.Flags
				var err error
				v, buf, kind, flags, err = b.ValueMeta(col, mc.cur.At(col)+b.SlotRank(tm, s), t, buf)
				if err != nil {
					return err
				}
				if kind == record.String {
					w.lb.SetMeta(b.Names[col], v, flags)
				}
			}
			mc.buf = buf
			series, _, err := w.sampleSeries(t, nil)
			if err != nil {
				return err
			}
			if series != nil {
				w.add(series, t, 1)
				if memo != nil {
					*memo = series
				}
			}
		}
		mc.cur.Next(tm)
	}
	return ev.flush(&w.tally)
}
