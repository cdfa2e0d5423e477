// Command kafkaproduce is the bare side of bench/sink-kafka.sh: it reads a
// corpus of JSON lines and turns every line into the Kafka record the kafka
// sink writes (key: the stream's labels as JSON; value: the line; headers:
// the WAL end position, then each label), with sluice's own parser and
// record code, untimed. Then it produces all of them with franz-go to a
// topic of the same broker, timed, as a plain program would:
//
//   - txn: transactional as the sink is (acks=all, idempotent, one
//     transaction of -batch records after the other: Begin, Produce each,
//     Flush, EndTransaction commit);
//   - plain: idempotent, not transactional (acks=all), every record
//     produced asynchronously, one Flush at the end;
//   - sink: not bare: sluice's kafka sink itself (internal/sink with
//     internal/sink/kafka, batch -batch, linger 50ms) delivering the same
//     lines from a WAL written beforehand, untimed, as ingest writes it,
//     in a temporary directory: the sink's cost without ingest beside it.
//     Timed from its start (connecting, then reading back the topic's
//     position, a few milliseconds: a first run on one line made the
//     topic) to every record sent.
//
// The client has the sink's settings (compression, the sticky key
// partitioner, 1000012-byte batches, linger -linger), so the difference to
// sluice is sluice's own work, not the client's configuration. The topic
// is created with -partitions partitions if missing.
//
// Output, one line per mode: "mode M records N seconds S records/s R cpu C",
// C being this process's CPU seconds (user+system) while it produced.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/kafka"
	"github.com/sluicelog/sluice/internal/wal"
)

type options struct {
	brokers     []string
	topic       string
	corpus      string
	tenant      string
	streams     []string
	partitions  int
	batch       int
	compression string
	linger      time.Duration
	modes       []string
	watch       int // a PID whose CPU time is reported beside each mode's (the broker's)
	verbose     bool
	cpuProfile  string
	level       int
}

func main() {
	var o options
	brokers := flag.String("brokers", "", "the brokers, host:port[,host:port...]")
	flag.StringVar(&o.topic, "topic", "kafkaproduce", "the topic prefix: each mode produces to TOPIC-MODE")
	flag.StringVar(&o.corpus, "corpus", "", "the NDJSON corpus `file`")
	flag.StringVar(&o.tenant, "tenant", "default", "the tenant of every record, as sluice gives it")
	streams := flag.String("stream-fields", strings.Join(record.DefaultStreamFields, ","),
		"the fields that make a line's stream (labels), as _stream_fields (sluice's default when the push names none)")
	flag.IntVar(&o.partitions, "partitions", 8, "the partitions of each topic it creates")
	flag.IntVar(&o.batch, "batch", 10000, "records per transaction (txn)")
	flag.StringVar(&o.compression, "compression", "zstd", "zstd, lz4, snappy, gzip or none")
	flag.DurationVar(&o.linger, "linger", 0, "the producer's linger (the sink's is 0)")
	modes := flag.String("modes", "txn,plain", "what to run, in order: txn, plain, sink")
	flag.BoolVar(&o.verbose, "v", false, "print each transaction's times (produce calls, flush, commit) and franz-go's info log to stderr")
	flag.IntVar(&o.level, "level", 0, "the compression level (the codec's own numbers; 0: franz-go's default)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed spans to `file`")
	flag.IntVar(&o.watch, "cpu-of", 0, "a `PID` (the broker's) whose CPU seconds while each mode produced are printed too")
	flag.Parse()
	if *brokers == "" || o.corpus == "" {
		fmt.Fprintln(os.Stderr, "kafkaproduce: -brokers and -corpus are required")
		os.Exit(2)
	}
	o.brokers = strings.Split(*brokers, ",")
	o.streams = strings.Split(*streams, ",")
	o.modes = strings.Split(*modes, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "kafkaproduce:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx := context.Background()
	codec, err := codecOf(o.compression)
	if err != nil {
		return err
	}
	if o.level != 0 {
		codec = codec.WithLevel(o.level)
	}
	recs, blocks, err := recordsOf(ctx, o)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for _, m := range o.modes {
		topic := o.topic + "-" + m
		if err := createTopic(ctx, o, topic); err != nil {
			return err
		}
		for i := range recs {
			resetRecord(&recs[i])
		}
		var secs, cpu float64
		other0 := procCPU(o.watch)
		switch m {
		case "txn":
			secs, cpu, err = produceTxn(ctx, o, codec, topic, recs)
		case "plain":
			secs, cpu, err = producePlain(ctx, o, codec, topic, recs)
		case "sink":
			secs, cpu, err = runSink(ctx, o, topic, blocks, len(recs))
		default:
			err = fmt.Errorf("mode %q: want txn, plain or sink", m)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		other := procCPU(o.watch) - other0
		fmt.Printf("mode %s records %d seconds %.3f records/s %.0f cpu %.2f", m, len(recs), secs, float64(len(recs))/secs, cpu)
		if o.watch != 0 {
			fmt.Printf(" cpu-of %d %.2f", o.watch, other)
		}
		fmt.Println()
	}
	return nil
}

func codecOf(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "zstd":
		return kgo.ZstdCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "none":
		return kgo.NoCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want zstd, lz4, snappy, gzip or none", name)
}

// recordsOf parses the corpus as POST /insert/jsonline does with the
// stream fields of o, and returns the records the kafka sink would write
// for it (value: line, headers: labels), the position header of each
// batch of o.batch records a made-up WAL end of the same length as the
// sink's; and the blocks ingest writes to the WAL for it.
func recordsOf(ctx context.Context, o options) ([]kgo.Record, [][]byte, error) {
	f, err := os.Open(o.corpus)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	cfg := record.DefaultConfig()
	cfg.StreamFields = o.streams
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		return nil, nil, err
	}
	var (
		enc    rows.Encoder
		out    []kgo.Record
		blocks [][]byte
		b      sink.Batch
		pos    []byte
		nrec   int
	)
	err = p.Reader(ctx, f, func(rb *record.Batch) error {
		if len(rb.Errors) > 0 {
			return fmt.Errorf("%s: %d lines refused, the first: %v", o.corpus, len(rb.Errors), rb.Errors[0])
		}
		data := enc.Append(nil, o.tenant, rb)
		blocks = append(blocks, data)
		blk, err := rows.Decode(data)
		if err != nil {
			return err
		}
		b.Reset()
		b.AppendBlock(blk, wal.Pos{})
		for i := range b.Records {
			r := &b.Records[i]
			if nrec%o.batch == 0 {
				pos = strconv.AppendInt([]byte("1:"), int64(100000000+nrec*400), 10)
			}
			nrec++
			hs := make([]kgo.RecordHeader, 0, 1+len(r.Labels))
			hs = append(hs, kgo.RecordHeader{Key: kafka.PositionHeader, Value: pos})
			for _, l := range r.Labels {
				hs = append(hs, kgo.RecordHeader{Key: l.Name, Value: []byte(l.Value)})
			}
			out = append(out, kgo.Record{Key: clone(r.LabelsJSON), Value: clone(r.Line), Headers: hs})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", o.corpus, err)
	}
	return out, blocks, nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// resetRecord clears what a produce set in r, so that it is produced again
// as new.
func resetRecord(r *kgo.Record) {
	*r = kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers}
}

func clientOpts(o options, codec kgo.CompressionCodec, topic string) []kgo.Opt {
	var opts []kgo.Opt
	if o.verbose {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	return append(opts,
		kgo.SeedBrokers(o.brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerBatchMaxBytes(kafka.DefaultMaxRecordBytes),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerLinger(o.linger),
		// As the sink (internal/sink/kafka's connect says why).
		kgo.MaxBufferedRecords(1<<20),
		kgo.MetadataMinAge(100*time.Millisecond),
	)
}

// createTopic creates topic with o.partitions partitions if it does not
// exist, then writes one record to each partition: a partition just
// created may refuse the first produce (the leader not ready yet), and the
// client then waits MetadataMinAge (5 s) before it asks again, which is
// not the producer's speed. The sink's topic is made by the bench's first
// line, seconds before.
func createTopic(ctx context.Context, o options, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(o.partitions), -1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	for p := range int32(o.partitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("warm-up")}).FirstErr(); err != nil {
			return fmt.Errorf("warm up partition %d of %q: %w", p, topic, err)
		}
	}
	return nil
}

// cpuSeconds returns this process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// procCPU returns the user and system CPU seconds of process pid so far
// (/proc/PID/stat, in clock ticks of 1/100 s as Linux exports them), 0
// if pid is 0 or unreadable.
func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// firstFailure keeps the first error the produce promises report.
type firstFailure struct{ p atomic.Pointer[error] }

func (f *firstFailure) promise(_ *kgo.Record, err error) {
	if err != nil {
		f.p.CompareAndSwap(nil, &err)
	}
}

func (f *firstFailure) err() error {
	if p := f.p.Load(); p != nil {
		return fmt.Errorf("produce: %w", *p)
	}
	return nil
}

// produceTxn produces recs in transactions of o.batch records, one after
// the other, as the kafka sink does.
func produceTxn(ctx context.Context, o options, codec kgo.CompressionCodec, topic string, recs []kgo.Record) (float64, float64, error) {
	opts := append(clientOpts(o, codec, topic),
		kgo.TransactionalID(fmt.Sprintf("kafkaproduce-%d", time.Now().UnixNano())),
		kgo.TransactionTimeout(time.Minute))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	// Untimed, as the sink's Open and the bench's first line: the
	// producer id, and the topic's metadata.
	if err := warmUp(ctx, cl, true); err != nil {
		return 0, 0, err
	}
	var failed firstFailure
	promise := failed.promise
	cpu0 := cpuSeconds()
	start := time.Now()
	for lo := 0; lo < len(recs); lo += o.batch {
		hi := min(lo+o.batch, len(recs))
		if err := cl.BeginTransaction(); err != nil {
			return 0, 0, fmt.Errorf("begin transaction: %w", err)
		}
		t0 := time.Now()
		for i := lo; i < hi; i++ {
			cl.Produce(ctx, &recs[i], promise)
		}
		t1 := time.Now()
		if err := cl.Flush(ctx); err != nil {
			return 0, 0, fmt.Errorf("flush: %w", err)
		}
		if err := failed.err(); err != nil {
			return 0, 0, err
		}
		t2 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return 0, 0, fmt.Errorf("commit: %w", err)
		}
		if o.verbose {
			fmt.Fprintf(os.Stderr, "txn %d records: produce calls %v, flush %v, commit %v\n", hi-lo,
				t1.Sub(t0).Round(time.Microsecond), t2.Sub(t1).Round(time.Microsecond), time.Since(t2).Round(time.Microsecond))
		}
	}
	return time.Since(start).Seconds(), cpuSeconds() - cpu0, nil
}

// runSink writes blocks to a new WAL and has sluice's kafka sink deliver
// them to topic; n is the records they hold. It returns the seconds and
// the CPU seconds from the sink's start to every record sent.
func runSink(ctx context.Context, o options, topic string, blocks [][]byte, n int) (float64, float64, error) {
	dir, err := os.MkdirTemp("", "kafkaproduce-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: quiet}, 0, nil)
	if err != nil {
		return 0, 0, err
	}
	defer l.Close()
	dest, err := kafka.New(kafka.Config{Sink: "kafkaproduce", Brokers: o.brokers, Topic: topic, Compression: o.compression,
		Partitions: o.partitions, TransactionalID: fmt.Sprintf("kafkaproduce-sink-%d", time.Now().UnixNano())})
	if err != nil {
		return 0, 0, err
	}
	s, err := sink.New(sink.Config{Name: "kafkaproduce", Type: "kafka", BatchSize: o.batch, Linger: 50 * time.Millisecond,
		Budget: 1 << 40, Dir: filepath.Join(dir, "sink")}, dest, quiet)
	if err != nil {
		return 0, 0, err
	}
	m := sink.NewManager([]*sink.Sink{s}, nil, quiet)
	m.Start(l)
	// run runs the sink until it has sent want records in all.
	run := func(want int) error {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx, l) }()
		defer func() {
			cancel()
			<-done
		}()
		for {
			st := m.Status()[0]
			if int(st.Records) >= want && st.Backlog == 0 {
				return nil
			}
			select {
			case err := <-done:
				return fmt.Errorf("the sink stopped: %v (%s)", err, st.LastError)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	// Untimed: the first block makes the topic, then the WAL holds the
	// rest.
	one := blocks[0]
	blk, err := rows.Decode(one)
	if err != nil {
		return 0, 0, err
	}
	if _, err := l.Append(one); err != nil {
		return 0, 0, err
	}
	if err := run(len(blk.Rows)); err != nil {
		return 0, 0, err
	}
	var last *wal.Pending
	for _, b := range blocks[1:] {
		p := l.Enqueue(b)
		last = &p
	}
	if last != nil {
		if _, err := last.Wait(); err != nil {
			return 0, 0, err
		}
	}
	cpu0 := cpuSeconds()
	start := time.Now()
	if err := run(n); err != nil {
		return 0, 0, err
	}
	return time.Since(start).Seconds(), cpuSeconds() - cpu0, nil
}

// warmUp produces one record, in a transaction if txn, untimed: the
// client then has its producer id and the topic's partitions and leaders.
// Without it, a topic created just before is often not yet ready when
// the client first asks, and the client waits MetadataMinAge (5 s) before
// it asks again: that wait is not the producer's speed.
func warmUp(ctx context.Context, cl *kgo.Client, txn bool) error {
	if txn {
		if err := cl.BeginTransaction(); err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	if txn {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
	}
	return nil
}

// producePlain produces every record asynchronously with an idempotent
// producer and flushes once.
func producePlain(ctx context.Context, o options, codec kgo.CompressionCodec, topic string, recs []kgo.Record) (float64, float64, error) {
	cl, err := kgo.NewClient(clientOpts(o, codec, topic)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	if err := warmUp(ctx, cl, false); err != nil {
		return 0, 0, err
	}
	var failed firstFailure
	promise := failed.promise
	cpu0 := cpuSeconds()
	start := time.Now()
	for i := range recs {
		cl.Produce(ctx, &recs[i], promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, 0, fmt.Errorf("flush: %w", err)
	}
	if err := failed.err(); err != nil {
		return 0, 0, err
	}
	return time.Since(start).Seconds(), cpuSeconds() - cpu0, nil
}
