package part

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/bin"
)

// ColumnStat is the stored size of one column across a part's blocks.
type ColumnStat struct {
	Name      string
	Encodings map[string]int // blocks per encoding
	Bytes     int64
	Values    int64
}

var encNames = [...]string{"string", "const", "dict", "int", "decimal", "hex", "time", "dict+rest"}

// Stats returns, for `sluice stats --columns` and for tuning the format,
// the stored bytes per column (the message and line columns are "_msg"
// and "_line", and the rows' own streams "_rows", and block headers
// "_header", of which the columns' gram filters are "_grams").
func (r *Reader) Stats() ([]ColumnStat, error) {
	byName := map[string]*ColumnStat{}
	get := func(name string) *ColumnStat {
		s := byName[name]
		if s == nil {
			s = &ColumnStat{Name: name, Encodings: map[string]int{}}
			byName[name] = s
		}
		return s
	}
	for i, bm := range r.Blocks {
		blob := r.data[bm.Off : bm.Off+bm.Len]
		d := bin.NewReader(blob)
		hdr, _ := readStream(&d, nil)
		get("_header").Bytes += int64(d.Off())
		var hd blockHeader
		if err := parseHeader(hdr, &hd); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		h := bin.NewReader(hd.rest)
		ncols := h.Count("columns", 4)
		rowLen := h.Uvarint("row streams")
		get("_rows").Bytes += int64(rowLen)
		if rowLen > uint64(len(blob)-d.Off()) {
			return nil, fmt.Errorf("block %d: row streams length %d beyond the block", i, rowLen)
		}
		cr := bin.NewReader(blob[d.Off()+int(rowLen):])
		var c colData
		for range ncols {
			name := h.String("name")
			c.reset()
			c.decode(&h, &cr, nil)
			if h.Err() != nil || cr.Err() != nil {
				break
			}
			if c.grams != nil {
				get("_grams").Bytes += int64(len(c.grams))
			}
			switch {
			case c.flags&colMsg != 0:
				name = "_msg"
			case c.flags&colLine != 0:
				name = "_line"
			}
			s := get(name)
			s.Bytes += int64(len(c.stored))
			s.Values += int64(c.n)
			s.Encodings[encNames[c.enc]]++
		}
		if err := firstErr(h.Err(), cr.Err()); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
	}
	var out []ColumnStat
	for _, s := range byName {
		out = append(out, *s)
	}
	return out, nil
}
