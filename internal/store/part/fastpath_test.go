package part_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// fastPathFormats are the formats the fast-path checks parse with: a
// pattern whose captures split words ("idxcode" is the token "idxcode"
// whatever its captures), and a regexp whose captures end mid-word.
var fastPathFormats = []string{"auto", "logfmt", "text", "syslog", "pattern=id<a>x<b> <c>", `regexp=^(?P<k>\w+)=(?P<v>\w*)`}

// partBytes writes refs as one part and returns the file's bytes.
func partBytes(t testing.TB, refs []ref, opts part.WriterOptions) []byte {
	t.Helper()
	fs := vfs.NewMem()
	writeRefsOpts(t, fs, "p.part", refs, opts)
	data, release, err := fs.Map("p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	return bytes.Clone(data)
}

// checkFastPaths writes blocks' rows with the writer's fast paths and
// without, with each option set, and requires the same bytes.
func checkFastPaths(t testing.TB, blocks []*rows.Block) {
	t.Helper()
	refs := sortedRefs(blocks)
	for _, opts := range []part.WriterOptions{{}, {FastCompression: true}, {NoFilters: true}} {
		fast := partBytes(t, refs, opts)
		plain := partBytes(t, refs, part.Plain(opts))
		if !bytes.Equal(fast, plain) {
			t.Fatalf("options %+v: the part with fast paths (%d bytes) differs from the plain one (%d bytes)", opts, len(fast), len(plain))
		}
	}
}

// parsedLoose parses input as format and encodes its records as the
// head holds them; false if the input does not parse.
func parsedLoose(format string, input []byte) ([]*rows.Block, bool) {
	p, err := parse.New(parse.Options{Format: format, Record: record.DefaultConfig()})
	if err != nil {
		return nil, false
	}
	var enc rows.Encoder
	var blocks []*rows.Block
	err = p.Bytes(context.Background(), input, func(b *record.Batch) error {
		blk, err := rows.Decode(enc.Append(nil, "t", b))
		blocks = append(blocks, blk)
		return err
	})
	return blocks, err == nil
}

// fastPathInputs are inputs whose values repeat, alternate, are digits,
// sit at word edges and inside words, in and out of their lines.
func fastPathInputs() map[string]string {
	in := map[string]string{}
	for name, s := range samples {
		in["sample="+name] = s
	}
	var sb strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&sb, `{"_time":"2026-01-15T08:00:%02d.%09dZ","service":"s%d","level":"%s","msg":"%s","n":%d,"id":"x%dy","e":"","u":"caf\u00e9%d"}`+"\n",
			i%60, i*7919, i%3, []string{"info", "warn", "INFO"}[i%3/2], []string{"ok", "ok", "failed: 12", "\\\"quoted\\\""}[i%4], i%5, i%7, i%2)
	}
	in["json-repeats"] = sb.String()
	sb.Reset()
	for i := range 3000 {
		fmt.Fprintf(&sb, "ts=2026-01-15T08:00:%02dZ level=%s msg=\"took %dms\" k=%d%s id%dx%d rest\n",
			i%60, []string{"info", "debug"}[i%2], i%9, i%4, []string{"", "a", "_"}[i%3], i%3, i%11)
	}
	in["logfmt-edges"] = sb.String()
	return in
}

// TestFastPathsMatchPlain: the writer's fast paths (the token filter's
// text built from templates and values, the JSON flags of repeated
// values) write the bytes the plain paths write, for every format.
func TestFastPathsMatchPlain(t *testing.T) {
	for name, input := range fastPathInputs() {
		for _, format := range fastPathFormats {
			t.Run(name+"/format="+format, func(t *testing.T) {
				blocks, ok := parsedLoose(format, []byte(input))
				if !ok {
					t.Skip("does not parse as " + format)
				}
				checkFastPaths(t, blocks)
			})
		}
	}
	t.Run("loghub", func(t *testing.T) {
		checkFastPaths(t, encoded(t, "auto", parsetest.LoghubCorpus(t)))
	})
	t.Run("sdk", func(t *testing.T) {
		checkFastPaths(t, sdkRows(t, 70000)) // three blocks
	})
}

// TestWriterReuse: parts written one after another, with each option set,
// whose block writers come from the pool with their buffers and their last
// block's state, are the bytes of a write by new block writers.
func TestWriterReuse(t *testing.T) {
	var inputs [][]ref
	for _, name := range []string{"json", "logfmt", "syslog", "text"} {
		inputs = append(inputs, sortedRefs(encoded(t, "auto", []byte(samples[name]))))
	}
	inputs = append(inputs, sortedRefs(sdkRows(t, 40000)))
	options := []part.WriterOptions{{}, {FastCompression: true}, {NoFilters: true}}
	first := make([][]byte, len(inputs)*len(options))
	for round := range 3 {
		for i, refs := range inputs {
			for k, opts := range options {
				if round == 0 {
					// Two collections empty the pool: the first write
					// of each is by new block writers.
					runtime.GC()
					runtime.GC()
				}
				got := partBytes(t, refs, opts)
				if at := i*len(options) + k; round == 0 {
					first[at] = got
				} else if !bytes.Equal(got, first[at]) {
					t.Fatalf("round %d, input %d, options %+v: the part differs from the first write", round, i, opts)
				}
			}
		}
	}
}

// FuzzFastPaths: for any input in any format, the part written with the
// fast paths is the plain one's bytes.
func FuzzFastPaths(f *testing.F) {
	for _, s := range samples {
		f.Add(s, uint8(0))
	}
	f.Add("idaxb c\nidaaxbb c\nidxb cc\nid1x2 3\n", uint8(4))
	f.Add("k=v\nk=vv\nkk=\nk=1\n", uint8(5))
	f.Add("ts=2026-01-15T08:00:00Z level=info k=1a\nts=2026-01-15T08:00:01Z level=info k=1\n", uint8(1))
	f.Fuzz(func(t *testing.T, input string, format uint8) {
		if len(input) > 1<<14 {
			return
		}
		blocks, ok := parsedLoose(fastPathFormats[int(format)%len(fastPathFormats)], []byte(input))
		if !ok {
			return
		}
		checkFastPaths(t, blocks)
	})
}
