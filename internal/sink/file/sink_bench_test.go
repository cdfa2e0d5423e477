package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

// sinkCorpus returns the NDJSON the sink benchmark delivers: the first
// SLUICE_SINK_LINES (default 100,000) lines of the file SLUICE_SINK_CORPUS
// names (bench/corpus.sh's canonical corpus, say), or else 20,000 lines
// shaped as that corpus's, values varied.
func sinkCorpus(b *testing.B) []byte {
	if path := os.Getenv("SLUICE_SINK_CORPUS"); path != "" {
		n := 100000
		if v := os.Getenv("SLUICE_SINK_LINES"); v != "" {
			fmt.Sscan(v, &n)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		end := 0
		for range n {
			k := bytes.IndexByte(data[end:], '\n')
			if k < 0 {
				end = len(data)
				break
			}
			end += k + 1
		}
		return data[:end]
	}
	levels := []string{"info", "warn", "error", "debug"}
	paths := []string{"/api/v1/cart/items", "/api/v1/users/42", "/healthz", "/static/app.js"}
	services := []string{"reports", "auth", "checkout", "search", "payments"}
	var buf bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&buf, `{"ts":%d,"level":%q,"msg":"request %d done","service":%q,"host":"node-%02d","trace_id":"%032x",`+
			`"http":{"method":"PUT","path":%q,"status":%d,"latency_ms":%d.%03d,"bytes":%d,"user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},`+
			`"error":{"type":"SQLException","message":"failed to call upstream: payment declined","stack":"Traceback (most recent call last):\n  File \"app.py\", line %d, in handler\n    raise\n"}}`+"\n",
			1768464000000+i*25, levels[i%4], i%97, services[i%len(services)], i%40, uint64(i)*0x9e3779b97f4a7c15, paths[i%len(paths)],
			200+i%5*100, i%997, i%1000, i*7919%300000, 600+i%300)
	}
	return buf.Bytes()
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSink: the file sink's whole cost per record, the runtime
// included (the WAL read, each frame's decode into records, the NDJSON
// rendering, compression, write and fsync, the position): a WAL written
// as ingest writes it (untimed), delivered from its start by a sink of
// every tenant with the default batch. cpu-ns/rec is the process's CPU
// (user+system) per delivered record; with -cpuprofile, the stages'
// shares. SLUICE_SINK_CORPUS (and SLUICE_SINK_LINES) deliver the real
// corpus instead of corpus-shaped lines.
func BenchmarkSink(b *testing.B) {
	frames, n := sinktest.Frames(b, "default", sinkCorpus(b), "service", "host")
	for _, comp := range []string{"none", "zstd", "gzip"} {
		b.Run("compression="+comp, func(b *testing.B) {
			var cpu time.Duration
			var written int64
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
				if err != nil {
					b.Fatal(err)
				}
				dest, err := New(Config{Sink: "bench", Dir: filepath.Join(dir, "out"), Compression: comp})
				if err != nil {
					b.Fatal(err)
				}
				s, err := sink.New(sink.Config{Name: "bench", Type: "file", Dir: filepath.Join(dir, "sink")}, dest, sinktest.Quiet())
				if err != nil {
					b.Fatal(err)
				}
				m := sink.NewManager([]*sink.Sink{s}, nil, sinktest.Quiet())
				m.Start(l)
				var last wal.Pending
				for _, f := range frames {
					last = l.Enqueue(f)
				}
				if _, err := last.Wait(); err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				cpu0 := cpuTime(b)
				b.StartTimer()
				go func() { done <- m.Run(ctx, l) }()
				for {
					st := m.Status()[0]
					if int(st.Records) >= n && st.Backlog == 0 {
						break
					}
					select {
					case err := <-done:
						b.Fatalf("the sink stopped: %v (%s)", err, st.LastError)
					case <-time.After(2 * time.Millisecond):
					}
				}
				b.StopTimer()
				cpu += cpuTime(b) - cpu0
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				l.Close()
				files, err := dest.Files()
				if err != nil {
					b.Fatal(err)
				}
				written = 0
				for _, f := range files {
					st, err := os.Stat(f)
					if err != nil {
						b.Fatal(err)
					}
					written += st.Size()
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/rec")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/rec")
			b.ReportMetric(float64(written)/float64(n), "B/rec")
		})
	}
}
