package server

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/protocol/jsonline"
	"github.com/sluicelog/sluice/internal/record"
)

// TestParsersKeepManyIdle: as many parsers as requests held at once come
// back from the free list, past maxFreePerKey, up to maxIdle in all.
func TestParsersKeepManyIdle(t *testing.T) {
	var ps parsers
	opts := parse.Options{Format: "json", Record: record.DefaultConfig()}
	get := func(n int) ([]*parse.Parser, *parserList) {
		t.Helper()
		out := make([]*parse.Parser, n)
		var list *parserList
		for i := range out {
			p, l, err := ps.get(opts)
			if err != nil {
				t.Fatal(err)
			}
			out[i], list = p, l
		}
		return out, list
	}
	held, list := get(3 * maxFreePerKey)
	for _, p := range held {
		ps.put(list, p)
	}
	if ps.idle != len(held) || len(list.idle) != len(held) {
		t.Fatalf("%d idle (%d in the list), want %d", ps.idle, len(list.idle), len(held))
	}
	was := map[*parse.Parser]bool{}
	for _, p := range held {
		was[p] = true
	}
	again, _ := get(len(held))
	for i, p := range again {
		if !was[p] {
			t.Fatalf("parser %d of %d is new, want one kept", i, len(held))
		}
	}
	if ps.idle != 0 {
		t.Fatalf("%d idle after taking them all", ps.idle)
	}
	more, _ := get(maxIdle + 10 - len(again))
	for _, p := range append(again, more...) {
		ps.put(list, p)
	}
	if ps.idle != maxIdle || len(list.idle) != maxIdle {
		t.Errorf("%d idle (%d in the list), want the bound %d", ps.idle, len(list.idle), maxIdle)
	}
}

// TestParsersPlain: a request that sets no parameter gets its parser from
// the same list as one whose options are built in full, its options
// built once per format; a request setting one is not plain.
func TestParsersPlain(t *testing.T) {
	var ps parsers
	base := parse.Options{MaxLineSize: 1 << 20, MaxDepth: 64, Record: record.DefaultConfig()}
	for _, format := range []string{"json", "auto", "json"} {
		built := 0
		p, plain, err := ps.getPlain(format, func() (parse.Options, error) {
			built++
			return jsonline.Options(nil, nil, format, base)
		})
		if err != nil {
			t.Fatal(err)
		}
		ps.put(plain, p)
		opts, err := jsonline.Options(url.Values{}, http.Header{}, format, base)
		if err != nil {
			t.Fatal(err)
		}
		p, full, err := ps.get(opts)
		if err != nil {
			t.Fatal(err)
		}
		ps.put(full, p)
		if plain == nil || plain != full {
			t.Errorf("format %s: plain list %p, full %p", format, plain, full)
		}
		if want := len(ps.plain); built > 1 || want > 2 {
			t.Errorf("format %s: options built %d times, %d formats kept", format, built, want)
		}
	}
	for _, tc := range []struct {
		q     url.Values
		h     http.Header
		plain bool
	}{
		{nil, http.Header{"Content-Type": {"application/x-ndjson"}}, true},
		{url.Values{"_msg_field": {"m"}}, nil, false},
		{url.Values{"format": {"json"}}, nil, false},
		{nil, http.Header{"Vl-Msg-Field": {"m"}}, false},
		{nil, http.Header{"Vl-Stream-Fields": {"a"}}, false},
	} {
		if got := jsonline.Plain(tc.q, tc.h); got != tc.plain {
			t.Errorf("Plain(%v, %v) = %v, want %v", tc.q, tc.h, got, tc.plain)
		}
	}
}
