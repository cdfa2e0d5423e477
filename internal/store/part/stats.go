package part

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/store/bin"
)

// ColumnStat is the stored size of one column across a part's blocks.
type ColumnStat struct {
	Name      string
	Encodings map[string]int // blocks per encoding
	Bytes     int64
	Values    int64
}

var encNames = [...]string{"string", "const", "dict", "int", "decimal", "hex", "time"}

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
		h := bin.NewReader(hdr)
		h.Uvarint("rows")
		for range h.Count("templates", 1) {
			h.BytesN("template")
		}
		ncols := h.Count("columns", 4)
		rowLen := h.Uvarint("row streams")
		get("_rows").Bytes += int64(rowLen)
		for range ncols {
			name := h.String("name")
			flags := h.Byte("flags")
			enc := h.Byte("encoding")
			n := h.Uvarint("count")
			h.Byte("meta")
			switch enc {
			case encHex:
				h.Uvarint("hex")
			case encTime:
				h.Bytes(7*uint64(h.Byte("shapes")), "shapes")
			}
			if flags&colMinMax != 0 {
				h.Bytes(16, "minmax")
			}
			if flags&colGrams != 0 {
				get("_grams").Bytes += int64(len(h.BytesN("grams")))
			}
			l := h.Uvarint("length")
			switch {
			case flags&colMsg != 0:
				name = "_msg"
			case flags&colLine != 0:
				name = "_line"
			}
			s := get(name)
			s.Bytes += int64(l)
			s.Values += int64(n)
			if int(enc) < len(encNames) {
				s.Encodings[encNames[enc]]++
			}
		}
		if err := h.Err(); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
	}
	var out []ColumnStat
	for _, s := range byName {
		out = append(out, *s)
	}
	return out, nil
}
