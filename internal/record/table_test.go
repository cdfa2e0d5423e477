package record

import "testing"

func TestTablesReset(t *testing.T) {
	n := NewNames()
	s := NewStreams()
	var kept []Labels
	for round := range 3 {
		// Past a page, so that reset drops pages too.
		for i := range pageSize + 10 {
			name := []byte{byte('a' + round), byte(i), byte(i >> 8)}
			if id, ok := n.Lookup(name); !ok || id != uint32(i) {
				t.Fatalf("round %d: name %d has id %d (%v)", round, i, id, ok)
			}
		}
		ls := Labels{{Name: "app", Value: string(rune('a' + round))}}
		id, ok := s.Intern(ls)
		if !ok || id != 1 {
			t.Fatalf("round %d: stream id %d (%v), want 1 (0 is the empty set)", round, id, ok)
		}
		kept = append(kept, s.Get(id))
		n.Reset()
		s.Reset()
		if n.Len() != 0 || s.Len() != 1 || len(s.Get(0)) != 0 {
			t.Fatalf("round %d: after Reset %d names, %d streams, stream 0 %v", round, n.Len(), s.Len(), s.Get(0))
		}
		if n.t.pages[1] != nil || s.t.pages[0][1] != nil {
			t.Fatalf("round %d: Reset kept a page past the first, or an entry", round)
		}
	}
	// Label sets handed out before a Reset are untouched by it.
	for round, ls := range kept {
		if want := string(rune('a' + round)); len(ls) != 1 || ls[0].Value != want {
			t.Errorf("round %d: kept labels %v, want app=%s", round, ls, want)
		}
	}
}
