package parsetest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
)

// ReceiveTime is the receive time the helpers give every batch:
// 2026-01-15T12:00:00Z.
const ReceiveTime int64 = 1768478400 * 1e9

// Result is what a parser made of an input: one normalized JSON object per
// record (record.Batch.AppendJSON) and one "LINE:COL: message" per
// rejected line, each in input order.
type Result struct {
	Records []string
	Errors  []string
	Lines   []string // each record's original line, byte-exact
}

// Run feeds input to p through a Splitter, in chunks of the given sizes
// (the rest in one final chunk), carrying unconsumed bytes from chunk to
// chunk as a streaming reader does.
func Run(p lines.Parser, cfg record.Config, input []byte, chunks []int) Result {
	var sp lines.Splitter
	return Feed(&sp, cfg, input, chunks, func(sp *lines.Splitter, bl *record.Builder, final bool) int {
		return lines.Run(sp, bl, p, final)
	})
}

// Feed is Run for any parse step (lines.Run with a parser, a multiline
// Joiner's Run) and a splitter the caller configures (its MaxLineSize).
func Feed(sp *lines.Splitter, cfg record.Config, input []byte, chunks []int, parse func(sp *lines.Splitter, bl *record.Builder, final bool) int) Result {
	var (
		res   Result
		bl    = record.NewBuilder(cfg)
		carry []byte
	)
	pos := 0
	for i := 0; ; i++ {
		final := i >= len(chunks)
		end := len(input)
		if !final {
			end = min(pos+chunks[i], len(input))
		}
		b := record.GetBatch()
		b.Data = append(append(b.Data[:0], carry...), input[pos:end]...)
		b.ReceiveTime = ReceiveTime
		pos = end
		bl.Start(b)
		n := parse(sp, bl, final)
		carry = append(carry[:0], b.Data[n:]...)
		Collect(&res, b)
		record.PutBatch(b)
		if final {
			return res
		}
	}
}

// Collect appends a batch's records and errors to res.
func Collect(res *Result, b *record.Batch) {
	for i := range b.Records {
		res.Records = append(res.Records, string(b.AppendJSON(nil, i)))
		res.Lines = append(res.Lines, string(b.Bytes(b.Records[i].Line)))
	}
	for i := range b.Errors {
		res.Errors = append(res.Errors, b.Errors[i].Error())
	}
}

// RandomChunks returns chunk sizes that cut an input of n bytes at random
// places, seeded so that a failure can be replayed.
func RandomChunks(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var chunks []int
	for left := n; left > 0; {
		c := 1 + r.IntN(min(left, 64))
		chunks = append(chunks, c)
		left -= c
	}
	return chunks
}

// Shared returns the path of ../shared/<name> beside the module root (the
// team's shared material: Loghub samples, JSONTestSuite), or skips the
// test with a message when it is absent: the project builds and passes
// its tests without it.
func Shared(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(filepath.Dir(dir), "shared", name)
			if _, err := os.Stat(p); err == nil {
				return p
			}
			break
		}
	}
	tb.Skipf("../shared/%s not found beside the module root: skipped", name)
	return ""
}

// LoghubCorpus returns every Loghub sample (../shared/loghub/*/*_2k.log)
// concatenated, each ending with a newline, or skips when they are absent.
func LoghubCorpus(tb testing.TB) []byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(Shared(tb, "loghub"), "*", "*_2k.log"))
	if err != nil || len(files) == 0 {
		tb.Skip("no Loghub samples in ../shared/loghub")
	}
	var all []byte
	for _, name := range files {
		in, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, in...)
		if len(all) > 0 && all[len(all)-1] != '\n' {
			all = append(all, '\n')
		}
	}
	return all
}
