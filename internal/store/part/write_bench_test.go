package part_test

import (
	"bytes"
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
	refs := sortedRefs(sdkRows(b, n))
	fs := vfs.NewMem()
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		writeRefsOpts(b, fs, "p.part", refs, part.WriterOptions{FastCompression: true})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
	// The process's CPU time (the encoders' and the GC's too) moves less
	// than the elapsed time when other processes share the cores.
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N)/n, "cpu-ns/record")
	}
}
