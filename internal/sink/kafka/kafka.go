// Package kafka is the Kafka destination of a sink: a transactional,
// idempotent producer (github.com/twmb/franz-go, acks=all) that writes
// each batch in one transaction.
//
// Records: the key is the record's stream (its labels as a JSON object),
// so the default partitioner (murmur2 of the key, as Kafka's own clients)
// keeps one stream in one partition, in order. The value is the line
// (value: line) or a JSON object of the record (value: json: time,
// tenant, labels, fields, line). With headers: labels, each label is a
// header too. The Kafka timestamp is the time of the produce, not the log
// record's (a broker refuses timestamps too far from its clock; the
// record's time is in the JSON value).
//
// Exactly once: every record of a batch carries the batch's WAL end
// position in the header sluice-wal-end ("SEGMENT:OFFSET", decimal), and
// the batch is committed as one transaction. Open (and any delivery after
// an error) first initialises the producer id of the transactional id,
// which completes or aborts a transaction a crashed sluice left open, then
// reads, read_committed, the last records of every partition of the topic:
// all records of one transaction carry the same end, transactions come one
// after the other, so the largest end found is the end of the last
// committed batch, and the sink resumes after it. A delivery whose commit
// outcome is unknown (a timeout, a broken connection) is settled the same
// way before it is retried: if the topic already holds its end, it was
// committed.
//
// REQUIRES: the topic is written by this sink alone (other writers'
// records carry no position and are skipped; another transactional
// writer's open transactions delay Open until they end).
//
// Records the broker refuses for their size (MESSAGE_TOO_LARGE: larger
// than the topic's max.message.bytes or than MaxRecordBytes) go to the
// dead letter with the reason; the rest of the batch is committed.
//
// It must never commit a record without the position that covers it.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

// PositionHeader is the header that carries a batch's WAL end position.
const PositionHeader = "sluice-wal-end"

// Defaults.
const (
	DefaultTimeout            = 30 * time.Second
	DefaultTransactionTimeout = time.Minute
	DefaultClientID           = "sluice"
	// DefaultMaxRecordBytes is franz-go's (and Kafka's) default batch
	// limit: a record larger than this is refused before it is sent.
	DefaultMaxRecordBytes = 1000012
)

// Config configures the destination.
type Config struct {
	// Sink is the sink's name: the default transactional id derives
	// from it.
	Sink    string
	Brokers []string
	Topic   string
	// Compression is zstd (the default, at its fastest level), lz4, snappy,
	// gzip or none.
	Compression string
	// Value is line (the default) or json.
	Value string
	// Headers is labels (the default: each label a header) or none.
	Headers string
	// TransactionalID identifies the producer across restarts ("sluice-"
	// and the sink's name if empty): a new producer with it fences the
	// old one and ends its open transaction. Two sluices must not share
	// one.
	TransactionalID string
	ClientID        string
	// Timeout bounds one delivery, connecting included (DefaultTimeout
	// if 0): a broker that hangs is retried like one that fails.
	Timeout time.Duration
	// TransactionTimeout is how long the broker keeps a transaction
	// open without an end (DefaultTransactionTimeout if 0): after a
	// crash, a transaction is ended by the next Open or by this timeout.
	// The broker caps it with transaction.max.timeout.ms (15 min).
	TransactionTimeout time.Duration
	// MaxRecordBytes bounds a record batch the producer sends
	// (DefaultMaxRecordBytes if 0).
	MaxRecordBytes int
	// Partitions, if not 0, creates the topic when it does not exist,
	// with this many partitions and the broker's default replication
	// factor. 0: a missing topic is an error (retried).
	Partitions int
}

// Dest is the Kafka destination.
//
// Concurrency: as sink.Destination, one goroutine.
type Dest struct {
	cfg   Config
	codec kgo.CompressionCodec
	json  bool
	heads bool
	cl    *kgo.Client // nil until connected, and after an error

	recs  []kgo.Record
	arena []byte
	hdrs  []kgo.RecordHeader
}

// New checks cfg and returns the destination; Open connects.
func New(cfg Config) (*Dest, error) {
	d := &Dest{}
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafka.brokers: none; want host:port of one or more brokers")
	}
	for _, b := range cfg.Brokers {
		if _, port, ok := strings.Cut(b, ":"); !ok || port == "" || strings.ContainsAny(b, "/ ") {
			return nil, fmt.Errorf("kafka.brokers: %q: want host:port", b)
		}
	}
	if err := checkTopic(cfg.Topic); err != nil {
		return nil, fmt.Errorf("kafka.topic: %v", err)
	}
	switch cfg.Compression {
	case "", "zstd":
		// SpeedFastest rather than franz-go's default (SpeedDefault):
		// zstd was the largest part of the sink's CPU while ingest ran
		// (a quarter of sluice's, bench/sink-kafka.sh with PROFILE); on
		// 1 MiB of the corpus with franz-go's encoder options it takes
		// about a quarter less CPU for 2% more bytes.
		d.codec = kgo.ZstdCompression().WithLevel(int(zstd.SpeedFastest))
	case "lz4":
		d.codec = kgo.Lz4Compression()
	case "snappy":
		d.codec = kgo.SnappyCompression()
	case "gzip":
		d.codec = kgo.GzipCompression()
	case "none":
		d.codec = kgo.NoCompression()
	default:
		return nil, fmt.Errorf("kafka.compression %q: want zstd, lz4, snappy, gzip or none", cfg.Compression)
	}
	switch cfg.Value {
	case "", "line":
	case "json":
		d.json = true
	default:
		return nil, fmt.Errorf("kafka.value %q: want line or json", cfg.Value)
	}
	switch cfg.Headers {
	case "", "labels":
		d.heads = true
	case "none":
	default:
		return nil, fmt.Errorf("kafka.headers %q: want labels or none", cfg.Headers)
	}
	if cfg.TransactionalID == "" {
		cfg.TransactionalID = "sluice-" + cfg.Sink
	}
	if cfg.ClientID == "" {
		cfg.ClientID = DefaultClientID
	}
	if cfg.Timeout < 0 || cfg.TransactionTimeout < 0 || cfg.MaxRecordBytes < 0 || cfg.Partitions < 0 {
		return nil, errors.New("kafka: timeouts, max_record_bytes and partitions must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.TransactionTimeout == 0 {
		cfg.TransactionTimeout = DefaultTransactionTimeout
	}
	if cfg.MaxRecordBytes == 0 {
		cfg.MaxRecordBytes = DefaultMaxRecordBytes
	}
	d.cfg = cfg
	return d, nil
}

// LineOnly reports that the records' fields are not needed (value: line;
// the headers are the labels): the runtime then does not render them.
func (d *Dest) LineOnly() bool { return !d.json }

// checkTopic applies Kafka's rule for topic names.
func checkTopic(t string) error {
	if t == "" {
		return errors.New("empty")
	}
	if len(t) > 249 || t == "." || t == ".." {
		return fmt.Errorf("%q: not a valid Kafka topic name", t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q: a topic name has only letters, digits, '.', '_' and '-'", t)
		}
	}
	return nil
}

func (d *Dest) errorf(format string, args ...any) error {
	return fmt.Errorf("kafka sink %q: "+format, append([]any{d.cfg.Sink}, args...)...)
}

// Open connects, ends a transaction a crashed producer left open, and
// returns the end of the last committed batch.
func (d *Dest) Open(ctx context.Context) (wal.Pos, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	return d.connect(ctx)
}

// connect makes the producer, initialises its producer id (fencing any
// older producer of the transactional id and ending its transaction), and
// reads the position the topic holds.
func (d *Dest) connect(ctx context.Context) (wal.Pos, bool, error) {
	d.drop()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.cfg.Brokers...),
		kgo.ClientID(d.cfg.ClientID),
		kgo.DefaultProduceTopic(d.cfg.Topic),
		kgo.TransactionalID(d.cfg.TransactionalID),
		kgo.TransactionTimeout(d.cfg.TransactionTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(d.codec),
		kgo.ProducerBatchMaxBytes(int32(d.cfg.MaxRecordBytes)),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerLinger(0),
		// A batch is produced whole, then flushed: with the default
		// (10,000) a Produce call of a larger batch waits for the
		// broker's answer to the first records before it can buffer
		// the rest. The batch's records are in memory already.
		kgo.MaxBufferedRecords(maxBuffered),
		// The first produce of a transaction begun right after a
		// commit is often refused with CONCURRENT_TRANSACTIONS (Kafka
		// 4's transactions, KIP-890: the commit's markers are still
		// being written). franz-go retries it after a metadata
		// refresh, which the default MetadataMinAge holds back up to
		// 5 s: a stall of up to 5 s per such transaction.
		kgo.MetadataMinAge(metadataMinAge),
	)
	if err != nil {
		return wal.Pos{}, false, sink.Permanent(d.errorf("%w", err))
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return wal.Pos{}, false, d.errorf("init producer id of transactional id %q: %w", d.cfg.TransactionalID, err)
	}
	pos, ok, err := d.readPosition(ctx, cl)
	if err != nil {
		cl.Close()
		return wal.Pos{}, false, err
	}
	d.cl = cl
	return pos, ok, nil
}

// metadataMinAge is the least time between two metadata requests of the
// producer: see connect.
const metadataMinAge = 100 * time.Millisecond

// maxBuffered is the records the producer buffers before Produce waits:
// more than a batch holds with the runtime's defaults.
const maxBuffered = 1 << 20

// drop closes the producer: the next delivery connects again and first
// learns what the topic holds.
func (d *Dest) drop() {
	if d.cl != nil {
		d.cl.Close()
		d.cl = nil
	}
}

// Close closes the producer.
func (d *Dest) Close() error {
	d.drop()
	return nil
}

// readWindow is how many offsets from its end a partition is first read
// back to find a record with a position; it grows sixteenfold while the
// window holds none (aborted transactions and markers take offsets too).
const readWindow = 64

// readPosition returns the largest position header among the committed
// records of the topic: the end of the last committed batch.
func (d *Dest) readPosition(ctx context.Context, cl *kgo.Client) (wal.Pos, bool, error) {
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(ctx, d.cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	missing := errors.Is(err, kerr.UnknownTopicOrPartition) || err == nil && len(ends[d.cfg.Topic]) == 0
	if err != nil && !missing {
		return wal.Pos{}, false, d.errorf("list the committed end offsets of topic %q: %w", d.cfg.Topic, err)
	}
	if missing {
		if d.cfg.Partitions == 0 {
			return wal.Pos{}, false, d.errorf("topic %q does not exist; create it (kafka-topics.sh --create --topic %s), or set kafka.partitions",
				d.cfg.Topic, d.cfg.Topic)
		}
		// (CreateTopic returns its result's error too: another
		// creator's topic is as good.)
		_, err := adm.CreateTopic(ctx, int32(d.cfg.Partitions), -1, nil, d.cfg.Topic)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return wal.Pos{}, false, d.errorf("create topic %q with %d partitions: %w", d.cfg.Topic, d.cfg.Partitions, err)
		}
		return wal.Pos{}, false, nil // new: nothing in it
	}
	starts, err := adm.ListStartOffsets(ctx, d.cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return wal.Pos{}, false, d.errorf("list the start offsets of topic %q: %w", d.cfg.Topic, err)
	}
	type span struct{ start, end, from int64 }
	todo := map[int32]span{}
	for p, o := range ends[d.cfg.Topic] {
		s, _ := starts.Lookup(d.cfg.Topic, p)
		if o.Offset > s.Offset {
			todo[p] = span{start: s.Offset, end: o.Offset, from: max(s.Offset, o.Offset-readWindow)}
		}
	}
	var best wal.Pos
	found := false
	for len(todo) > 0 {
		from := map[int32]int64{}
		end := map[int32]int64{}
		for p, s := range todo {
			from[p], end[p] = s.from, s.end
		}
		got, err := d.scan(ctx, from, end)
		if err != nil {
			return wal.Pos{}, false, err
		}
		for p, s := range todo {
			pos, ok := got[p]
			if ok {
				if !found || posLess(best, pos) {
					best, found = pos, true
				}
			}
			if ok || s.from == s.start {
				delete(todo, p)
				continue
			}
			s.from = max(s.start, s.end-(s.end-s.from)*16)
			todo[p] = s
		}
	}
	return best, found, nil
}

// scan reads, read_committed, each partition p from from[p] to end[p] and
// returns the largest position among its records, by partition.
func (d *Dest) scan(ctx context.Context, from, end map[int32]int64) (map[int32]wal.Pos, error) {
	offs := map[int32]kgo.Offset{}
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.cfg.Brokers...),
		kgo.ClientID(d.cfg.ClientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.cfg.Topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The commit markers: the last offset below the committed end
		// is one, so seeing it says the partition was read to its end.
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return nil, d.errorf("%w", err)
	}
	defer cl.Close()
	got := map[int32]wal.Pos{}
	left := len(from)
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, d.errorf("read back the last records of topic %q: %w", d.cfg.Topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("partition %d: %w", p, err) })
		if ferr != nil {
			return nil, d.errorf("read back the last records of topic %q: %w", d.cfg.Topic, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			e, ok := end[r.Partition]
			if !ok {
				return
			}
			if !r.Attrs.IsControl() {
				for _, h := range r.Headers {
					if h.Key != PositionHeader {
						continue
					}
					if pos, err := parsePos(h.Value); err == nil {
						if cur, ok := got[r.Partition]; !ok || posLess(cur, pos) {
							got[r.Partition] = pos
						}
					}
				}
			}
			if r.Offset >= e-1 {
				delete(end, r.Partition)
				left--
				cl.PauseFetchPartitions(map[string][]int32{d.cfg.Topic: {r.Partition}})
			}
		})
	}
	return got, nil
}

// appendPos appends p as a position header's value.
func appendPos(dst []byte, p wal.Pos) []byte {
	dst = strconv.AppendUint(dst, p.Segment, 10)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, p.Offset, 10)
}

// parsePos reads a position header's value.
func parsePos(b []byte) (wal.Pos, error) {
	seg, off, ok := strings.Cut(string(b), ":")
	s, err1 := strconv.ParseUint(seg, 10, 64)
	o, err2 := strconv.ParseInt(off, 10, 64)
	if !ok || err1 != nil || err2 != nil || o < 0 {
		return wal.Pos{}, fmt.Errorf("position %q: want SEGMENT:OFFSET", b)
	}
	return wal.Pos{Segment: s, Offset: o}, nil
}

func posLess(a, b wal.Pos) bool {
	return a.Segment < b.Segment || (a.Segment == b.Segment && a.Offset < b.Offset)
}

// Deliver writes b's records and their end position in one transaction.
// Records refused for their size are found one by one, each in a
// transaction of its own that is aborted, and go to the dead letter; the
// rest is committed.
func (d *Dest) Deliver(ctx context.Context, b *sink.Batch) ([]sink.Rejected, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	if d.cl == nil {
		// After an error the last commit's outcome may be unknown: the
		// topic says whether b is in it.
		pos, ok, err := d.connect(ctx)
		if err != nil {
			return nil, err
		}
		if ok && !posLess(pos, b.End) {
			return nil, nil
		}
	}
	idx := make([]int, 0, len(b.Records))
	for i := range b.Records {
		if !b.Settled(i) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	large, err := d.txn(ctx, b, idx, true)
	if err != nil {
		d.drop()
		return nil, err
	}
	if len(large) == 0 {
		return nil, nil
	}
	// Some record is too large, or shares a request with one that is (the
	// broker refuses a whole batch): each suspect alone.
	var rej []sink.Rejected
	for _, i := range large {
		l, err := d.txn(ctx, b, []int{i}, false)
		if err != nil {
			d.drop()
			return nil, err
		}
		if len(l) > 0 {
			rej = append(rej, sink.Rejected{Index: i, Reason: d.tooLarge(&b.Records[i]).Error()})
		}
	}
	rest := slices.DeleteFunc(idx, func(i int) bool {
		return slices.ContainsFunc(rej, func(r sink.Rejected) bool { return r.Index == i })
	})
	// Before the commit: a crash after it must not lose them.
	if err := b.DeadLetter(rej); err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		large, err := d.txn(ctx, b, rest, true)
		if err != nil {
			d.drop()
			return rej, err
		}
		if len(large) > 0 {
			return rej, d.errorf("%d records refused as too large together, though each fits alone", len(large))
		}
	}
	return rej, nil
}

func (d *Dest) tooLarge(r *sink.Record) error {
	return d.errorf("record of %d bytes: %v (the topic's max.message.bytes, or max_record_bytes %d)", len(r.Line),
		kerr.MessageTooLarge, d.cfg.MaxRecordBytes)
}

// txn produces records idx of b in one transaction, and commits it if
// commit is set and every record was written. It returns the records
// refused as too large (the transaction is then aborted).
func (d *Dest) txn(ctx context.Context, b *sink.Batch, idx []int, commit bool) ([]int, error) {
	if err := d.cl.BeginTransaction(); err != nil {
		return nil, d.errorf("begin transaction: %w", err)
	}
	d.build(b, idx)
	var (
		mu    sync.Mutex
		large []int
		first error
	)
	for k := range d.recs {
		i := idx[k]
		d.cl.Produce(ctx, &d.recs[k], func(_ *kgo.Record, err error) {
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, kerr.MessageTooLarge) {
				large = append(large, i)
			} else if first == nil {
				first = err
			}
		})
	}
	if err := d.cl.Flush(ctx); err != nil {
		return nil, d.errorf("produce %d records to topic %q: %w", len(idx), d.cfg.Topic, err)
	}
	mu.Lock()
	end := kgo.TryCommit
	if !commit || first != nil || len(large) > 0 {
		end = kgo.TryAbort
	}
	mu.Unlock()
	if err := d.cl.EndTransaction(ctx, end); err != nil {
		return nil, d.errorf("end transaction (commit %v): %w", end == kgo.TryCommit, err)
	}
	if first != nil {
		return nil, d.errorf("produce %d records to topic %q: %w", len(idx), d.cfg.Topic, first)
	}
	slices.Sort(large)
	return large, nil
}

// build makes the Kafka records of records idx of b in d.recs. Their
// bytes view b's arena and d's: valid until the next build.
func (d *Dest) build(b *sink.Batch, idx []int) {
	clear(d.recs)
	d.recs = slices.Grow(d.recs[:0], len(idx))[:len(idx)]
	d.arena = d.arena[:0]
	d.hdrs = d.hdrs[:0]
	// Offsets first, slices at the end: the arenas move as they grow.
	type span struct{ val, hdr [2]int }
	spans := make([]span, len(idx))
	posAt := len(d.arena)
	d.arena = appendPos(d.arena, b.End)
	posEnd := len(d.arena)
	for k, i := range idx {
		r := &b.Records[i]
		if d.json {
			s := len(d.arena)
			d.arena = sink.AppendJSON(d.arena, r)
			spans[k].val = [2]int{s, len(d.arena)}
		}
		s := len(d.hdrs)
		d.hdrs = append(d.hdrs, kgo.RecordHeader{Key: PositionHeader})
		if d.heads {
			for _, l := range r.Labels {
				d.hdrs = append(d.hdrs, kgo.RecordHeader{Key: l.Name, Value: labelValue(l)})
			}
		}
		spans[k].hdr = [2]int{s, len(d.hdrs)}
	}
	pos := d.arena[posAt:posEnd:posEnd]
	for k, i := range idx {
		r := &b.Records[i]
		kr := &d.recs[k]
		kr.Key = r.LabelsJSON
		if d.json {
			kr.Value = d.arena[spans[k].val[0]:spans[k].val[1]:spans[k].val[1]]
		} else {
			kr.Value = r.Line
		}
		kr.Headers = d.hdrs[spans[k].hdr[0]:spans[k].hdr[1]:spans[k].hdr[1]]
		kr.Headers[0].Value = pos
	}
}

func labelValue(l record.Label) []byte {
	if l.Value == "" {
		return []byte{}
	}
	return []byte(l.Value)
}
