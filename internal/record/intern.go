package record

import "encoding/binary"

// Intern returns the id of an explicit label set, adding it if it is new:
// for protocols that carry a record's stream labels apart from its fields
// (Loki's push API). ls must be sorted by name, names distinct. It returns
// false when the table is full.
//
// Explicit sets never share ids with sets a Builder derived from fields:
// their keys start with a byte no derived key starts with.
//
// Concurrency: as Names: the table's single writer only.
func (s *Streams) Intern(ls Labels) (uint32, bool) {
	key := []byte{0xff}
	for _, l := range ls {
		key = binary.AppendUvarint(key, uint64(len(l.Name)))
		key = append(key, l.Name...)
		key = binary.AppendUvarint(key, uint64(len(l.Value)))
		key = append(key, l.Value...)
	}
	return s.lookup(key, func() Labels { return append(Labels(nil), ls...) })
}
