package part_test

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// sdkRows returns n records as the Go SDK sends bench/sdkload's over
// NDJSON (sdk/batch.go: _time, the Client's labels, the record's own
// fields), parsed and encoded as the head holds them.
func sdkRows(b testing.TB, n int) []*rows.Block {
	var buf bytes.Buffer
	t0 := time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC)
	line := make([]byte, 0, 256)
	for i := range n {
		t := t0.Add(time.Duration(i) * 1700 * time.Nanosecond)
		line = append(line[:0], `{"_time":"`...)
		line = t.AppendFormat(line, "2006-01-02T15:04:05.000000000Z")
		line = append(line, `","service":"sdkload","level":"info","msg":"request served","route":"/api/v1/orders","status":200,"latency_ms":`...)
		line = strconv.AppendInt(line, int64(i%997), 10)
		line = append(line, `,"seq":`...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, "}\n"...)
		buf.Write(line)
	}
	return encoded(b, "auto", buf.Bytes())
}

// BenchmarkWriteSDK writes SDK-shaped records into one part, as a flush
// does (FastCompression, filters on), and reports the cost per record:
// elapsed, and the process's CPU time (run it with -cpu 1 to compare the
// two).
func BenchmarkWriteSDK(b *testing.B) {
	const n = 200000
	benchWrite(b, sdkRows(b, n), n, part.WriterOptions{FastCompression: true})
}

// benchWrite writes the n records of blocks into one part with opts, and
// reports the cost per record (elapsed, and the process's CPU time) and
// the part's bytes per record.
func benchWrite(b *testing.B, blocks []*rows.Block, n int, opts part.WriterOptions) {
	refs := sortedRefs(blocks)
	fs := vfs.NewMem()
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		writeRefsOpts(b, fs, "p.part", refs, opts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
	// The process's CPU time (the encoders' and the GC's too) moves less
	// than the elapsed time when other processes share the cores.
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/record")
	}
	if st, err := fs.Stat("p.part"); err == nil {
		b.ReportMetric(float64(st.Size())/float64(n), "bytes/record")
	}
}

// messageRows returns n records of one stream whose messages are as the
// app corpus' (bench/gen.py app): ten frequent ones, eight rarer ones
// (about 1% of the rows each, some in other scripts, some escaped), and
// a tail of distinct ones (3%), so that the blocks of a merged part
// store the column as a dictionary and the rest.
func messageRows(b testing.TB, n int) []*rows.Block {
	frequent := []string{"upstream timeout", "connection reset by peer", "retrying request", "user logged in",
		"request completed", "slow query", "payment declined", "cache miss", "order created", "rate limit exceeded"}
	rarer := []string{"Zahlung fehlgeschlagen", "订单已创建", `\u8ba2\u5355\u5df2\u521b\u5efa`, "naïve café",
		`na\u00efve caf\u00e9`, "emoji ok 🚀", `emoji ok \ud83d\ude80`, "ユーザーがログインしました"}
	var buf bytes.Buffer
	t0 := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	x := uint64(1)
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407
		var msg string
		switch r := x >> 33 % 100; {
		case r < 3:
			msg = `query \"SELECT * FROM t WHERE id=` + strconv.Itoa(int(x>>40%1000000)) + `\" took ` + strconv.Itoa(int(x>>20%5000)) + `ms\tslow`
		case r < 11:
			msg = rarer[r-3]
		default:
			msg = frequent[r%10]
		}
		fmt.Fprintf(&buf, `{"_time":"%s","service":"api","level":"info","msg":"%s"}`+"\n", t0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), msg)
	}
	return encoded(b, "auto", buf.Bytes())
}

// BenchmarkWriteMessages writes messageRows into one part, as a merge
// does (filters on, compressed for size).
func BenchmarkWriteMessages(b *testing.B) {
	const n = 200000
	benchWrite(b, messageRows(b, n), n, part.WriterOptions{})
}
