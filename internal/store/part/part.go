package part

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/vfs"
)

// Version is the part format's version, written in every header and
// footer. FROZEN: parts written with any version from minVersion on must
// stay readable. Version 2 added each block's longest token to the index;
// version 3 the text columns' gram filters (grams.go); version 4 the JSON
// flags of the templates' in-line slots (jsontext.go); version 5 each
// block's flags in the index (BlockMeta.Fields); version 6 the
// dictionary-and-rest column encoding (enc_dictrest.go); version 7 the
// templates whose rows' message is their line (tmplMsgLine); version 8
// salted token filters with their probes chosen by their size (bloom.go).
//
// Layout numbers the writer's choices within a version (which values a
// dictionary-and-rest column makes entries, say): parts of one version
// read alike whatever their layout, and a reader never asks it. The
// benchmarks' cached stores are named by both (bench/lib.sh part_key), so
// that a writer storing the same data otherwise is measured on the parts
// it writes. Layout 2: a dictionary-and-rest column's repeated values of
// the rest become entries (enc_dictrest.go).
const (
	Version    = 8
	minVersion = 1
	Layout     = 2
)

const (
	magic      = "SLUICEPT"
	headerSize = 16 // magic, version, reserved
	footerSize = 68 // see docs/format/part.md
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Meta sums up a part.
type Meta struct {
	Rows      int64
	MinTime   int64 // Unix ns
	MaxTime   int64
	LineBytes int64 // the original lines' bytes
	Size      int64 // the file's bytes
	Streams   int
	Blocks    int
}

// BlockMeta locates one block and bounds its rows.
type BlockMeta struct {
	Stream           uint32
	Rows             int
	MinTime, MaxTime int64
	Off, Len         int64
	CRC              uint32

	// LongestToken is the length of the longest token run of the block's
	// lines (math.MaxInt32 when unknown: parts of format version 1).
	LongestToken int

	// Fields says whether a row of the block may have a field stored out
	// of its line (structured metadata: see LineRead.Meta), as the block's
	// header would (Block.OutOfLine), so that a count from the index
	// reads no block to learn it: FieldsUnknown in parts before
	// version 5.
	Fields BlockFields

	// The block's token filter, in the filter section.
	filterOff, filterLen int64
}

// BlockFields says where the fields of a block's rows are.
type BlockFields uint8

const (
	FieldsUnknown   BlockFields = iota // parts before version 5: read the block's header
	FieldsInLine                       // every field of every row is in its line
	FieldsOutOfLine                    // some row may have a field out of its line
)

// Flags of a block in the index (version 5 on).
const (
	blockOutOfLine  = 1 << 0 // FieldsOutOfLine
	blockFlagsKnown = blockOutOfLine
)

// Writer writes one part file.
//
// Concurrency: one goroutine.
type Writer struct {
	fs      vfs.FS
	path    string
	f       vfs.File
	off     int64
	buf     []byte
	streams []record.Labels
	blocks  []BlockMeta
	opts    WriterOptions
	bw      *blockWriter
	meta    Meta
	err     error

	encoders int
	jobs     chan *encodeJob
	pending  []*encodeJob // in the order of the file
	filters  []byte       // every block's token filter, written after the blocks
	free     []*blockWriter
	wg       sync.WaitGroup
}

// WriterOptions tune a Writer.
type WriterOptions struct {
	// FastCompression trades a few percent of size for speed, for a part
	// that will soon be merged into another (a flush during a bulk load).
	FastCompression bool
	// NoFilters leaves the token filters out (every block then "may
	// contain" every token): for a part that a compaction will rewrite
	// before it is queried much, such as a flush during a bulk load.
	NoFilters bool

	// plain turns the writer's fast paths off, for the tests that check
	// them against the plain ones (export_test.go).
	plain bool
}

// Create starts a part at path, replacing what is there.
func Create(fs vfs.FS, path string, opts WriterOptions) (*Writer, error) {
	f, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create part: %w", err)
	}
	w := &Writer{fs: fs, path: path, f: f, opts: opts}
	w.bw = w.newBlockWriter()
	w.meta.MinTime, w.meta.MaxTime = 1<<63-1, -1<<63
	hdr := make([]byte, headerSize)
	copy(hdr, magic)
	binary.LittleEndian.PutUint32(hdr[8:], Version)
	w.write(hdr)
	return w, w.err
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(p); err != nil {
		w.err = fmt.Errorf("write part %s: %w", w.path, err)
		return
	}
	w.off += int64(len(p))
}

// StartStream begins the rows of a stream.
// REQUIRES: streams come in the order of their labels' String, each once.
func (w *Writer) StartStream(ls record.Labels) error {
	w.flushBlock()
	w.streams = append(w.streams, ls)
	return w.err
}

// Add appends a row of the current stream, whose field names index names.
// REQUIRES: rows of a stream come in time order.
func (w *Writer) Add(r *rows.Row, names []string) error {
	if w.err != nil {
		return w.err
	}
	if len(w.streams) == 0 {
		return errors.New("part: Add before StartStream")
	}
	if w.bw == nil {
		return errors.New("part: Add after Finish or Abort")
	}
	w.bw.add(r, names)
	w.meta.LineBytes += int64(len(r.Line))
	if w.bw.full() {
		w.flushBlock()
	}
	return w.err
}

// encodeJob is one block being encoded by the writer's encoders.
type encodeJob struct {
	bw     *blockWriter
	meta   BlockMeta
	out    []byte
	filter []byte
	done   chan struct{}
}

// flushBlock hands the current block to an encoder and writes, in order,
// the blocks whose encoding is done. Blocks are encoded in parallel, one
// per CPU at most, and written in the order they were filled.
func (w *Writer) flushBlock() {
	if w.bw == nil {
		return // finished or aborted
	}
	n := w.bw.rows()
	if n == 0 || w.err != nil {
		return
	}
	bm := BlockMeta{Stream: uint32(len(w.streams) - 1), Rows: n, MinTime: w.bw.times[0], MaxTime: w.bw.times[0]}
	for _, t := range w.bw.times {
		bm.MinTime, bm.MaxTime = min(bm.MinTime, t), max(bm.MaxTime, t)
	}
	if w.jobs == nil {
		w.startEncoders()
	}
	j := &encodeJob{bw: w.bw, meta: bm, done: make(chan struct{})}
	w.pending = append(w.pending, j)
	w.jobs <- j
	if len(w.free) > 0 {
		w.bw, w.free = w.free[len(w.free)-1], w.free[:len(w.free)-1]
	} else {
		w.bw = w.newBlockWriter()
	}
	// Bound the blocks in flight, then write what is done.
	w.drain(len(w.pending) > w.encoders)
}

// drain writes the finished blocks at the head of the queue; with wait set
// it first waits for the oldest one.
func (w *Writer) drain(wait bool) {
	for len(w.pending) > 0 {
		j := w.pending[0]
		if wait {
			<-j.done
			wait = false
		} else {
			select {
			case <-j.done:
			default:
				return
			}
		}
		w.pending = w.pending[1:]
		j.meta.Off, j.meta.Len, j.meta.CRC = w.off, int64(len(j.out)), crc32.Checksum(j.out, crcTable)
		w.write(j.out)
		j.meta.filterOff, j.meta.filterLen = int64(len(w.filters)), int64(len(j.filter))
		j.meta.LongestToken = j.bw.tokens.longest
		j.meta.Fields = FieldsInLine
		if j.bw.outOfLine {
			j.meta.Fields = FieldsOutOfLine
		}
		w.filters = append(w.filters, j.filter...)
		w.blocks = append(w.blocks, j.meta)
		w.meta.Rows += int64(j.meta.Rows)
		w.meta.MinTime, w.meta.MaxTime = min(w.meta.MinTime, j.meta.MinTime), max(w.meta.MaxTime, j.meta.MaxTime)
		j.bw.reset()
		w.free = append(w.free, j.bw)
	}
}

func (w *Writer) startEncoders() {
	w.encoders = runtime.GOMAXPROCS(0)
	w.jobs = make(chan *encodeJob, w.encoders)
	for range w.encoders {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for j := range w.jobs {
				j.out = j.bw.encode(nil)
				j.filter = append([]byte(nil), j.bw.filter...)
				close(j.done)
			}
		}()
	}
}

// stopEncoders writes every pending block and stops the encoders.
func (w *Writer) stopEncoders() {
	for len(w.pending) > 0 {
		w.drain(true)
	}
	if w.jobs != nil {
		close(w.jobs)
		w.wg.Wait()
		w.jobs = nil
	}
}

// blockWriters keeps block writers, with their buffers grown to a block's
// size, from one part to the next: each flush writes a new part, and
// growing every column's slices from nothing again cost a tenth of a
// flush's time and most of its allocations.
var blockWriters = sync.Pool{New: func() any { return newBlockWriter() }}

// maxPooledColumns bounds the columns a pooled block writer keeps: one
// that met a block of very many fields is left to the GC.
const maxPooledColumns = 512

func (w *Writer) newBlockWriter() *blockWriter {
	bw := blockWriters.Get().(*blockWriter)
	bw.fast = w.opts.FastCompression
	bw.noFilter = w.opts.NoFilters
	bw.plain = w.opts.plain
	return bw
}

// releaseBlockWriters hands the writer's idle block writers back to the
// pool. REQUIRES: no block is pending (stopEncoders has returned).
func (w *Writer) releaseBlockWriters() {
	if w.bw != nil {
		w.bw.reset()
		w.free = append(w.free, w.bw)
		w.bw = nil
	}
	for _, bw := range w.free {
		if len(bw.spare) <= maxPooledColumns {
			blockWriters.Put(bw)
		}
	}
	w.free = nil
}

// Finish writes the index and footer, syncs the file and closes it.
func (w *Writer) Finish() (Meta, error) {
	w.flushBlock()
	w.stopEncoders()
	w.releaseBlockWriters()
	filtersOff := w.off
	w.write(w.filters)
	idx := binary.AppendUvarint(nil, uint64(len(w.streams)))
	for _, ls := range w.streams {
		idx = binary.AppendUvarint(idx, uint64(len(ls)))
		for _, l := range ls {
			idx = bin.AppendString(idx, l.Name)
			idx = bin.AppendString(idx, l.Value)
		}
	}
	idx = binary.AppendUvarint(idx, uint64(len(w.blocks)))
	for _, b := range w.blocks {
		idx = binary.AppendUvarint(idx, uint64(b.Stream))
		idx = binary.AppendUvarint(idx, uint64(b.Rows))
		idx = binary.AppendVarint(idx, b.MinTime)
		idx = binary.AppendUvarint(idx, uint64(b.MaxTime-b.MinTime))
		idx = binary.AppendUvarint(idx, uint64(b.Off))
		idx = binary.AppendUvarint(idx, uint64(b.Len))
		idx = binary.LittleEndian.AppendUint32(idx, b.CRC)
		idx = binary.AppendUvarint(idx, uint64(b.filterOff))
		idx = binary.AppendUvarint(idx, uint64(b.filterLen))
		idx = binary.AppendUvarint(idx, uint64(b.LongestToken))
		var flags uint64
		if b.Fields == FieldsOutOfLine {
			flags |= blockOutOfLine
		}
		idx = binary.AppendUvarint(idx, flags)
	}
	idx = binary.AppendUvarint(idx, uint64(filtersOff))
	idx = binary.AppendUvarint(idx, uint64(len(w.filters)))
	idx = binary.LittleEndian.AppendUint32(idx, crc32.Checksum(w.filters, crcTable))
	stored := appendStream(nil, idx, false)
	indexOff := w.off
	w.write(stored)
	if w.meta.Rows == 0 {
		w.meta.MinTime, w.meta.MaxTime = 0, 0
	}
	ft := make([]byte, 0, footerSize)
	ft = binary.LittleEndian.AppendUint64(ft, uint64(indexOff))
	ft = binary.LittleEndian.AppendUint64(ft, uint64(len(stored)))
	ft = binary.LittleEndian.AppendUint32(ft, crc32.Checksum(stored, crcTable))
	ft = binary.LittleEndian.AppendUint32(ft, Version)
	ft = binary.LittleEndian.AppendUint64(ft, uint64(w.meta.Rows))
	ft = binary.LittleEndian.AppendUint64(ft, uint64(w.meta.MinTime))
	ft = binary.LittleEndian.AppendUint64(ft, uint64(w.meta.MaxTime))
	ft = binary.LittleEndian.AppendUint64(ft, uint64(w.meta.LineBytes))
	ft = append(ft, magic...)
	ft = binary.LittleEndian.AppendUint32(ft, crc32.Checksum(ft, crcTable))
	w.write(ft)
	if w.err == nil {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("sync part %s: %w", w.path, err)
		}
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("close part %s: %w", w.path, err)
	}
	w.f = nil
	w.meta.Size, w.meta.Streams, w.meta.Blocks = w.off, len(w.streams), len(w.blocks)
	return w.meta, w.err
}

// Abort closes and removes an unfinished part.
func (w *Writer) Abort() {
	w.stopEncoders()
	w.releaseBlockWriters()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	_ = w.fs.Remove(w.path)
}

// Reader reads a part through a memory mapping.
//
// Concurrency: safe for concurrent reads with distinct Blocks.
type Reader struct {
	Path    string
	Meta    Meta
	Streams []record.Labels
	Blocks  []BlockMeta

	streamKeys []string // each stream's labels as a string (StreamKey)
	keysSorted bool     // streamKeys are in increasing order, no two alike (the writer's; not checked)

	data    []byte
	filters []byte
	release func() error
	fs      vfs.FS
	labels  map[string]map[string][]uint32 // name -> value -> streams
	version uint32
	// checked has a bit per block whose checksum a read has verified: a
	// part never changes, so each block is checked once after Open, not
	// at every read of every query.
	checked []atomic.Uint64
	// streamEnd[s] is the end of stream s's blocks in Blocks, which the
	// writer lays out stream by stream (StreamBlocks); nil when a part's
	// blocks are not in stream order, to be searched whole.
	streamEnd []int32
	// The headers of blocks read, when the reader uses a cache.
	cache   *BlockCache
	headers []atomic.Pointer[blockHeader]

	// OnDamage, if set before the first read, is told of each block
	// found damaged, once (from the goroutine whose read found it).
	OnDamage func(*CorruptionError)
	badMu    sync.Mutex
	bad      map[int]*CorruptionError // quarantined blocks
}

// StreamsWith returns the indexes of the streams that have the label
// name=value, in increasing order.
func (r *Reader) StreamsWith(name, value string) []uint32 { return r.labels[name][value] }

// LabelValues returns the values of a label name, with the streams that
// have each.
func (r *Reader) LabelValues(name string) map[string][]uint32 { return r.labels[name] }

// StreamKey returns stream s's labels as a string (record.Labels.String),
// made once at Open.
func (r *Reader) StreamKey(s uint32) string { return r.streamKeys[s] }

// StreamKeysSorted reports whether the streams are in the increasing
// order of their keys (StreamKey), no two alike, as the writer puts them;
// a reader that relies on it asks, since it is not checked at Open.
func (r *Reader) StreamKeysSorted() bool { return r.keysSorted }

// StreamBlocks returns the range [lo, hi) of Blocks that holds every
// block of stream s (and, in a part whose blocks are not in stream
// order, others too: a caller checks BlockMeta.Stream).
func (r *Reader) StreamBlocks(s uint32) (lo, hi int) {
	if r.streamEnd == nil || int(s) >= len(r.streamEnd) {
		return 0, len(r.Blocks)
	}
	if s > 0 {
		lo = int(r.streamEnd[s-1])
	}
	return lo, int(r.streamEnd[s])
}

// streamEnds returns the end of each stream's blocks in blocks, or nil
// when their streams are not in increasing order.
func streamEnds(blocks []BlockMeta, streams int) []int32 {
	ends := make([]int32, streams)
	s := uint32(0)
	for i := range blocks {
		bs := blocks[i].Stream
		if bs < s || int(bs) >= streams {
			return nil
		}
		for ; s < bs; s++ {
			ends[s] = int32(i)
		}
	}
	for ; int(s) < streams; s++ {
		ends[s] = int32(len(blocks))
	}
	return ends
}

// Filter returns the token filter of block i. A part of format version 1
// tokenized lines differently: its filters are not used (an empty Filter
// may contain anything).
func (r *Reader) Filter(i int) Filter {
	if r.version < 2 {
		return nil
	}
	b := &r.Blocks[i]
	return Filter(r.filters[b.filterOff : b.filterOff+b.filterLen])
}

// Open maps a part and reads its index, checking the footer and index
// checksums; blocks are checked when read.
func Open(fs vfs.FS, path string) (*Reader, error) {
	data, release, err := fs.Map(path)
	if err != nil {
		return nil, fmt.Errorf("open part: %w", err)
	}
	r := &Reader{Path: path, data: data, release: release, fs: fs}
	if err := r.load(); err != nil {
		release()
		return nil, err
	}
	return r, nil
}

func (r *Reader) corrupt(off int64, format string, args ...any) error {
	return &CorruptionError{Path: r.Path, Block: -1, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func (r *Reader) corruptBlock(i int, format string, args ...any) *CorruptionError {
	return &CorruptionError{Path: r.Path, Block: i, Offset: r.Blocks[i].Off, Reason: fmt.Sprintf(format, args...)}
}

func (r *Reader) load() error {
	n := int64(len(r.data))
	if n < headerSize+footerSize {
		return r.corrupt(0, "%d bytes, too short for a part", n)
	}
	if string(r.data[:8]) != magic {
		return r.corrupt(0, "bad magic")
	}
	r.version = binary.LittleEndian.Uint32(r.data[8:])
	ft := r.data[n-footerSize:]
	footerOK := crc32.Checksum(ft[:footerSize-4], crcTable) == binary.LittleEndian.Uint32(ft[footerSize-4:]) && string(ft[56:64]) == magic
	if r.version > Version && footerOK && binary.LittleEndian.Uint32(ft[20:]) == r.version {
		// A sound part of a later sluice (its footer, as laid out up to
		// this version, checks and names the same version): not damage.
		return fmt.Errorf("%w: part %s has format version %d; this sluice reads %d to %d: run the sluice that wrote it, or a later one",
			ErrNewerFormat, r.Path, r.version, minVersion, Version)
	}
	if r.version < minVersion || r.version > Version {
		return r.corrupt(8, "version %d, want %d to %d", r.version, minVersion, Version)
	}
	if !footerOK {
		return r.corrupt(n-footerSize, "footer checksum mismatch")
	}
	indexOff := int64(binary.LittleEndian.Uint64(ft[0:]))
	indexLen := int64(binary.LittleEndian.Uint64(ft[8:]))
	if indexOff < headerSize || indexLen < 0 || indexOff > n-footerSize || indexLen > n-footerSize-indexOff {
		return r.corrupt(n-footerSize, "index at %d+%d outside the file", indexOff, indexLen)
	}
	stored := r.data[indexOff : indexOff+indexLen]
	if crc32.Checksum(stored, crcTable) != binary.LittleEndian.Uint32(ft[16:]) {
		return r.corrupt(indexOff, "index checksum mismatch")
	}
	r.Meta = Meta{
		Rows:      int64(binary.LittleEndian.Uint64(ft[24:])),
		MinTime:   int64(binary.LittleEndian.Uint64(ft[32:])),
		MaxTime:   int64(binary.LittleEndian.Uint64(ft[40:])),
		LineBytes: int64(binary.LittleEndian.Uint64(ft[48:])),
		Size:      n,
	}
	d := bin.NewReader(stored)
	idx, _ := readStream(&d, nil)
	d.Done("index")
	if err := d.Err(); err != nil {
		return r.corrupt(indexOff, "index: %v", err)
	}
	x := bin.NewReader(idx)
	r.Streams = make([]record.Labels, x.Count("stream count", 1))
	for i := range r.Streams {
		ls := make(record.Labels, x.Count("label count", 2))
		for j := range ls {
			ls[j] = record.Label{Name: x.String("label name"), Value: x.String("label value")}
		}
		r.Streams[i] = ls
	}
	r.streamKeys = make([]string, len(r.Streams))
	for i, ls := range r.Streams {
		r.streamKeys[i] = ls.String()
	}
	r.keysSorted = true
	for i := 1; i < len(r.streamKeys); i++ {
		r.keysSorted = r.keysSorted && r.streamKeys[i-1] < r.streamKeys[i]
	}
	r.Blocks = make([]BlockMeta, x.Count("block count", 10))
	r.checked = make([]atomic.Uint64, (len(r.Blocks)+63)/64)
	var rowsSum int64
	for i := range r.Blocks {
		b := &r.Blocks[i]
		b.Stream = uint32(x.Bounded("block stream", uint64(len(r.Streams))))
		b.Rows = int(x.Bounded("block rows", maxBlockRows))
		b.MinTime = x.Varint("block min time")
		b.MaxTime = b.MinTime + int64(x.Uvarint("block time span"))
		b.Off = int64(x.Uvarint("block offset"))
		b.Len = int64(x.Uvarint("block length"))
		b.CRC = x.Uint32("block checksum")
		b.filterOff = int64(x.Uvarint("filter offset"))
		b.filterLen = int64(x.Uvarint("filter length"))
		b.LongestToken = math.MaxInt32
		if r.version >= 2 {
			b.LongestToken = int(x.Bounded("longest token", math.MaxInt32))
		}
		if r.version >= 5 {
			flags := x.Uvarint("block flags")
			if flags&^blockFlagsKnown != 0 {
				x.Fail("block flags")
			}
			b.Fields = FieldsInLine
			if flags&blockOutOfLine != 0 {
				b.Fields = FieldsOutOfLine
			}
		}
		if x.Err() == nil && (int(b.Stream) >= len(r.Streams) || b.Off < headerSize || b.Len < 0 || b.Off > indexOff || b.Len > indexOff-b.Off) {
			x.Fail("block location")
		}
		rowsSum += int64(b.Rows)
	}
	r.streamEnd = streamEnds(r.Blocks, len(r.Streams))
	filtersOff := int64(x.Uvarint("filters offset"))
	filtersLen := int64(x.Uvarint("filters length"))
	filtersCRC := x.Uint32("filters checksum")
	x.Done("index")
	if x.Err() == nil && (filtersOff < headerSize || filtersLen < 0 || filtersOff > indexOff || filtersLen > indexOff-filtersOff) {
		x.Fail("filters location")
	}
	for i := range r.Blocks {
		if b := &r.Blocks[i]; x.Err() == nil && (b.filterOff < 0 || b.filterLen < 0 || b.filterOff > filtersLen || b.filterLen > filtersLen-b.filterOff) {
			x.Fail("filter location")
		}
	}
	if err := x.Err(); err != nil {
		return r.corrupt(indexOff, "index: %v", err)
	}
	r.filters = r.data[filtersOff : filtersOff+filtersLen]
	if crc32.Checksum(r.filters, crcTable) != filtersCRC {
		return r.corrupt(filtersOff, "token filters checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(ft[20:]); v != r.version {
		return r.corrupt(n-footerSize, "footer version %d, header %d", v, r.version)
	}
	if rowsSum != r.Meta.Rows {
		return r.corrupt(indexOff, "index has %d rows, footer %d", rowsSum, r.Meta.Rows)
	}
	r.Meta.Streams, r.Meta.Blocks = len(r.Streams), len(r.Blocks)
	r.labels = map[string]map[string][]uint32{}
	keys := make(map[string]bool, len(r.Streams))
	for i, ls := range r.Streams {
		k := ls.String()
		if keys[k] {
			return r.corrupt(indexOff, "stream %s listed twice", k)
		}
		keys[k] = true
		for _, l := range ls {
			vals := r.labels[l.Name]
			if vals == nil {
				vals = map[string][]uint32{}
				r.labels[l.Name] = vals
			}
			vals[l.Value] = append(vals[l.Value], uint32(i))
		}
	}
	return nil
}

// Warm reads block i as a columnar read does (b lends its buffers), so
// that the block cache holds its parsed header, the templates and flags
// of its rows, their times and, with columns, its compressed columns
// decompressed (those the cache keeps: loadedCol): what a query finds
// there it neither checksums, decompresses nor parses again. Without a
// cache it does nothing. Damage is found and quarantined as by ReadRows.
func (r *Reader) Warm(i int, b *Block, columns bool) error {
	if r.headers == nil {
		return nil
	}
	*b = Block{raw: b.raw, lines: b.lines, vals: b.vals, fields: b.fields}
	if err := r.ReadColumns(i, b); err != nil {
		return err
	}
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	for c := range b.cols {
		if !columns {
			break
		}
		if _, err := b.loadedCol(c); err != nil {
			return err
		}
	}
	return nil
}

// readMode is what a block read builds: one per entry point.
type readMode uint8

const (
	readRows    readMode = iota // every row whole (ReadRows)
	readLines                   // rows' lines alone (ReadLines)
	readCount                   // how many rows hold the clauses (CountLines)
	readColumns                 // no row: the caller walks the columns (ReadColumns)
)

// A LineRead is the question of a ReadLines or CountLines read.
type LineRead struct {
	// Meta reads a block in full (as ReadRows does) when one of its rows
	// may have a field stored out of its line: such fields may be a
	// row's structured metadata, which readers of lines still want.
	// CountLines of such a block returns ErrOutOfLine.
	Meta bool
	// Contains keeps only the rows whose line holds every one of these
	// clauses (contains one of the literals of each), and rebuilds no
	// other line (block_match.go).
	Contains []Clause
	// NoLines, with Contains, leaves out the line of each row kept whose
	// every clause was found in its values or gaps (its Line is nil):
	// for a caller that only counts the rows.
	NoLines bool
	// Newest keeps only the newest Newest rows with a time in [From,
	// To] that hold the clauses (with no Contains, every row), and tests
	// or makes no older row: for a caller that wants the newest lines.
	// The rows still come in time order.
	Newest   int
	From, To int64
}

// ReadRows decodes block i into b with every row whole: its line, its
// message and its typed fields.
//
// Every read checks block i's checksum at its first read since Open. A
// block found damaged is quarantined: every later read of it fails at
// once with the same *CorruptionError (matching ErrCorrupt), and
// OnDamage, if set, is told once.
func (r *Reader) ReadRows(i int, b *Block) error {
	b.mode = readRows
	return r.read(i, b)
}

// ReadLines decodes the rows of block i that q keeps with their lines
// alone (no fields, no message), unless q.Meta reads the block in full.
func (r *Reader) ReadLines(i int, b *Block, q *LineRead) error {
	b.mode, b.q = readLines, *q
	if len(q.Contains) == 0 {
		b.q.NoLines = false
	}
	return r.read(i, b)
}

// CountLines returns how many rows of block i hold every clause of
// q.Contains (at least one), keeping no row; with q.Meta, a block whose
// rows may have fields out of their lines answers ErrOutOfLine, and its
// rows must be read instead.
func (r *Reader) CountLines(i int, b *Block, q *LineRead) (int, error) {
	if len(q.Contains) == 0 {
		return 0, errors.New("part: CountLines without clauses")
	}
	b.mode, b.q = readCount, *q
	b.q.NoLines, b.q.Newest = true, 0
	err := r.read(i, b)
	return b.counted, err
}

// ReadColumns reads block i without building a row: the caller walks
// the rows and reads their values itself (block_columns.go).
func (r *Reader) ReadColumns(i int, b *Block) error {
	b.mode = readColumns
	return r.read(i, b)
}

func (r *Reader) read(i int, b *Block) error {
	bm := &r.Blocks[i]
	blob := r.data[bm.Off : bm.Off+bm.Len]
	if err := r.verify(i, blob); err != nil {
		return err
	}
	b.minTime, b.maxTime = bm.MinTime, bm.MaxTime
	b.raw, b.lines, b.vals, b.fields = b.raw[:0], b.lines[:0], b.vals[:0], b.fields[:0]
	d := bin.NewReader(blob)
	hd, err := r.header(i, &d, b)
	if err == nil {
		err = decodeBlock(blob[d.Off():], hd, bm.Stream, b)
	}
	if errors.Is(err, ErrOutOfLine) {
		return err
	}
	if err != nil {
		return r.quarantine(r.corruptBlock(i, "%v", err))
	}
	for _, row := range b.Rows {
		if row.Time < bm.MinTime || row.Time > bm.MaxTime {
			return r.quarantine(r.corruptBlock(i, "a row's time is outside the block's range in the index"))
		}
	}
	if b.nrows != bm.Rows {
		return r.quarantine(r.corruptBlock(i, "%d rows, index %d", b.nrows, bm.Rows))
	}
	return nil
}

// verify checks block i's checksum the first time it is read; it
// returns the error that quarantined the block, if one did.
func (r *Reader) verify(i int, blob []byte) error {
	w, bit := &r.checked[i/64], uint64(1)<<(i%64)
	if w.Load()&bit != 0 {
		return nil
	}
	if err := r.badBlock(i); err != nil {
		return err
	}
	if crc32.Checksum(blob, crcTable) != r.Blocks[i].CRC {
		return r.quarantine(r.corruptBlock(i, "checksum mismatch"))
	}
	w.Or(bit)
	return nil
}

// BlockOutOfLine reports whether a row of block i may have a field stored
// out of its line (structured metadata: see LineRead.Meta): from the index
// (BlockMeta.Fields), or in parts before version 5 from the block's
// header (cached as a read caches it), after checking the block is
// sound; b lends its buffers. A caller that counts the block's rows from
// its BlockMeta learns so whether its rows' labels differ by their
// metadata.
func (r *Reader) BlockOutOfLine(i int, b *Block) (bool, error) {
	bm := &r.Blocks[i]
	if bm.Fields != FieldsUnknown {
		return bm.Fields == FieldsOutOfLine, nil
	}
	blob := r.data[bm.Off : bm.Off+bm.Len]
	if err := r.verify(i, blob); err != nil {
		return false, err
	}
	d := bin.NewReader(blob)
	hd, err := r.header(i, &d, b)
	if err != nil {
		return false, r.quarantine(r.corruptBlock(i, "%v", err))
	}
	return hd.outOfLine(), nil
}

// badBlock returns the error that quarantined block i, or nil.
func (r *Reader) badBlock(i int) error {
	r.badMu.Lock()
	defer r.badMu.Unlock()
	if e := r.bad[i]; e != nil {
		return e
	}
	return nil
}

// quarantine records block damage e; the first report of a block goes
// to OnDamage. It returns e, or the error recorded first.
func (r *Reader) quarantine(e *CorruptionError) error {
	r.badMu.Lock()
	if first := r.bad[e.Block]; first != nil {
		r.badMu.Unlock()
		return first
	}
	if r.bad == nil {
		r.bad = map[int]*CorruptionError{}
	}
	r.bad[e.Block] = e
	fn := r.OnDamage
	r.badMu.Unlock()
	if fn != nil {
		fn(e)
	}
	return e
}

// BadBlocks returns how many blocks reads have found damaged since Open.
func (r *Reader) BadBlocks() int {
	r.badMu.Lock()
	defer r.badMu.Unlock()
	return len(r.bad)
}

// Verify reads every block, checking its checksum and that it decodes,
// and calls fn with the damage of each damaged block, in block order.
// It stops early, returning ctx's error, when ctx is done.
func (r *Reader) Verify(ctx context.Context, fn func(*CorruptionError)) error {
	b := Block{Scan: true}
	for i := range r.Blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := r.ReadLines(i, &b, &LineRead{})
		r.DropBlock(i)
		var ce *CorruptionError
		if errors.As(err, &ce) {
			fn(ce)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// DropBlock says block i will not be read again soon: its pages leave the
// process's resident memory (they stay in the page cache, and a later read
// maps them again). For scans of whole parts: merges, exports.
func (r *Reader) DropBlock(i int) {
	bm := &r.Blocks[i]
	vfs.DropPages(r.fs, r.data[bm.Off:bm.Off+bm.Len])
}

// Close releases the mapping. REQUIRES: no Block read from r is in use.
func (r *Reader) Close() error {
	if r.release == nil {
		return nil
	}
	if r.cache != nil {
		r.cache.forget(r)
	}
	err := r.release()
	r.release = nil
	return err
}
