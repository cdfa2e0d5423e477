// Package file is the file destination of a sink: NDJSON files rotated by
// size and age, optionally compressed with gzip or zstd, delivered exactly
// once.
//
// Files are DIR/NAME-NNNNNNNN.ndjson (.gz, .zst), numbered upwards; the
// highest is being written, the others are complete. Each batch is written
// as one piece (one gzip member; zstd frames of up to zstdChunk bytes of
// NDJSON each: both formats read a concatenation as one stream) and
// fsynced; then NAME.state records the file, its size after the batch and
// the sink's WAL position, atomically.
// At start the file is truncated back to the recorded size and any later
// file removed, and the sink resumes from the recorded position: a crash
// between the write and the state leaves nothing twice.
//
// One line per record:
//
//	{"time":"2026-01-15T08:00:00.123456789Z","tenant":"t","labels":{...},"fields":{...},"line":"..."}
package file

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/vfs"
	"github.com/sluicelog/sluice/internal/wal"
)

// Defaults.
const (
	DefaultMaxBytes = 128 << 20
	DefaultMaxAge   = time.Hour
)

// Config configures the destination.
type Config struct {
	Sink string // names the files
	Dir  string
	// MaxBytes starts a new file once the current one has this many
	// bytes (as written, compressed or not).
	MaxBytes int64
	// MaxAge starts a new file once the current one is this old.
	MaxAge time.Duration
	// Compression is "", "none", "gzip" or "zstd".
	Compression string
}

// Dest is the file destination.
type Dest struct {
	cfg Config
	ext string
	f   *os.File
	st  state
	buf bytes.Buffer
	enc *zstd.Encoder
	// plain holds up to zstdChunk bytes of NDJSON before enc compresses
	// them as one frame (EncodeAll) onto zbuf, the piece.
	plain, zbuf []byte
	gz          *gzip.Writer
	line        []byte
	now         func() time.Time
}

// state is what NAME.state holds: 40 bytes, little endian.
type state struct {
	seq     uint64
	size    int64
	created int64 // Unix ns: when the file was started
	pos     wal.Pos
}

// New checks cfg; Open opens the files.
func New(cfg Config) (*Dest, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("file sink %q: no dir", cfg.Sink)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	d := &Dest{cfg: cfg, now: time.Now}
	switch cfg.Compression {
	case "", "none":
		d.ext = ".ndjson"
	case "gzip":
		d.ext = ".ndjson.gz"
	case "zstd":
		d.ext = ".ndjson.zst"
	default:
		return nil, fmt.Errorf("file sink %q: compression %q: want none, gzip or zstd", cfg.Sink, cfg.Compression)
	}
	return d, nil
}

func (d *Dest) statePath() string { return filepath.Join(d.cfg.Dir, d.cfg.Sink+".state") }

func (d *Dest) name(seq uint64) string {
	return filepath.Join(d.cfg.Dir, fmt.Sprintf("%s-%08d%s", d.cfg.Sink, seq, d.ext))
}

// Files returns the sink's files in order, the last being written.
func (d *Dest) Files() ([]string, error) {
	seqs, err := d.seqs()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(seqs))
	for i, s := range seqs {
		out[i] = d.name(s)
	}
	return out, nil
}

// seqs lists the numbers of the sink's files.
func (d *Dest) seqs() ([]uint64, error) {
	ents, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("file sink %q: %w", d.cfg.Sink, err)
	}
	var out []uint64
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), d.cfg.Sink+"-")
		if !ok {
			continue
		}
		digits, ok := strings.CutSuffix(rest, d.ext)
		if !ok || len(digits) != 8 {
			continue
		}
		if n, err := strconv.ParseUint(digits, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Open restores the files to the recorded state and returns its position.
func (d *Dest) Open(context.Context) (wal.Pos, bool, error) {
	if err := os.MkdirAll(d.cfg.Dir, 0o755); err != nil {
		return wal.Pos{}, false, fmt.Errorf("file sink %q: %w", d.cfg.Sink, err)
	}
	d.closeFile()
	b, err := os.ReadFile(d.statePath())
	has := err == nil
	switch {
	case errors.Is(err, os.ErrNotExist):
		seqs, err := d.seqs()
		if err != nil {
			return wal.Pos{}, false, err
		}
		d.st = state{seq: 1}
		if len(seqs) > 0 {
			d.st.seq = seqs[len(seqs)-1] + 1 // never append to a file we have no state of
		}
		d.st.created = d.now().UnixNano()
	case err != nil:
		return wal.Pos{}, false, fmt.Errorf("file sink %q: read state: %w", d.cfg.Sink, err)
	case len(b) != 40:
		return wal.Pos{}, false, sink.Permanent(fmt.Errorf("file sink %q: state %s: %d bytes, want 40", d.cfg.Sink, d.statePath(), len(b)))
	default:
		d.st = state{seq: binary.LittleEndian.Uint64(b), size: int64(binary.LittleEndian.Uint64(b[8:])),
			created: int64(binary.LittleEndian.Uint64(b[16:])),
			pos:     wal.Pos{Segment: binary.LittleEndian.Uint64(b[24:]), Offset: int64(binary.LittleEndian.Uint64(b[32:]))}}
	}
	if has && d.st.size > 0 {
		if err := d.checkCurrent(); err != nil {
			return wal.Pos{}, false, err
		}
	}
	// Undo what was written after the state: later files, the tail of
	// the current one.
	seqs, err := d.seqs()
	if err != nil {
		return wal.Pos{}, false, err
	}
	for _, s := range seqs {
		if s > d.st.seq {
			if err := os.Remove(d.name(s)); err != nil {
				return wal.Pos{}, false, fmt.Errorf("file sink %q: remove a file written after the state: %w", d.cfg.Sink, err)
			}
		}
	}
	f, err := os.OpenFile(d.name(d.st.seq), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return wal.Pos{}, false, fmt.Errorf("file sink %q: %w", d.cfg.Sink, err)
	}
	if err := f.Truncate(d.st.size); err != nil {
		f.Close()
		return wal.Pos{}, false, fmt.Errorf("file sink %q: truncate %s to %d: %w", d.cfg.Sink, f.Name(), d.st.size, err)
	}
	if _, err := f.Seek(d.st.size, 0); err != nil {
		f.Close()
		return wal.Pos{}, false, fmt.Errorf("file sink %q: %w", d.cfg.Sink, err)
	}
	d.f = f
	return d.st.pos, has, nil
}

// checkCurrent checks that the file the state records a size of is
// there: when it is not, truncating a new one to that size would write
// the next batch after zeros. The usual cause is a change of compression
// (another extension), which is refused naming the file there is.
func (d *Dest) checkCurrent() error {
	_, err := os.Stat(d.name(d.st.seq))
	if err == nil {
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("file sink %q: %w", d.cfg.Sink, err)
	}
	for _, ext := range []string{".ndjson", ".ndjson.gz", ".ndjson.zst"} {
		other := filepath.Join(d.cfg.Dir, fmt.Sprintf("%s-%08d%s", d.cfg.Sink, d.st.seq, ext))
		if _, err := os.Stat(other); err == nil {
			return sink.Permanent(fmt.Errorf("file sink %q: state %s records %d bytes of %s, which is missing, and %s is there: was the compression changed? Set it back, or move the files and the state away to start anew",
				d.cfg.Sink, d.statePath(), d.st.size, filepath.Base(d.name(d.st.seq)), filepath.Base(other)))
		}
	}
	return sink.Permanent(fmt.Errorf("file sink %q: state %s records %d bytes of %s, which is missing", d.cfg.Sink, d.statePath(), d.st.size, d.name(d.st.seq)))
}

// Deliver writes b's records as one piece, syncs, and records the state.
func (d *Dest) Deliver(_ context.Context, b *sink.Batch) ([]sink.Rejected, error) {
	if d.f == nil {
		if _, _, err := d.Open(context.Background()); err != nil {
			return nil, err
		}
	}
	if d.st.size >= d.cfg.MaxBytes || d.now().Sub(time.Unix(0, d.st.created)) >= d.cfg.MaxAge {
		if err := d.rotate(); err != nil {
			return nil, err
		}
	}
	piece, err := d.encode(b)
	if err != nil {
		return nil, err
	}
	if _, err := d.f.Write(piece); err != nil {
		d.closeFile() // Open truncates the partial write away
		return nil, fmt.Errorf("file sink %q: write %s: %w", d.cfg.Sink, d.name(d.st.seq), err)
	}
	if err := d.f.Sync(); err != nil {
		d.closeFile()
		return nil, fmt.Errorf("file sink %q: sync %s: %w", d.cfg.Sink, d.name(d.st.seq), err)
	}
	next := d.st
	next.size += int64(len(piece))
	next.pos = b.End
	if err := d.saveState(next); err != nil {
		d.closeFile()
		return nil, err
	}
	d.st = next
	return nil, nil
}

// rotate starts the next file; the state moves to it with the next batch.
func (d *Dest) rotate() error {
	d.closeFile()
	next := state{seq: d.st.seq + 1, created: d.now().UnixNano(), pos: d.st.pos}
	f, err := os.OpenFile(d.name(next.seq), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("file sink %q: rotate: %w", d.cfg.Sink, err)
	}
	d.f, d.st = f, next
	return nil
}

// zstdChunk is the NDJSON the file sink compresses as one zstd frame, at
// most: EncodeAll of such a chunk took 8% less CPU than the encoder's
// Write of each line (its copy into the encoder's block, its per-call
// work), the same bytes as one frame per batch on the corpus's lines
// (BenchmarkEncode), and bounds the rendered text the sink holds.
const zstdChunk = 1 << 20

// encode renders b as NDJSON, compressed as one piece.
func (d *Dest) encode(b *sink.Batch) ([]byte, error) {
	if d.cfg.Compression == "zstd" {
		return d.encodeZstd(b)
	}
	d.buf.Reset()
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch d.cfg.Compression {
	case "gzip":
		if d.gz == nil {
			d.gz = gzip.NewWriter(&d.buf)
		} else {
			d.gz.Reset(&d.buf)
		}
		w = d.gz
	}
	for i := range b.Records {
		l := appendLine(d.line[:0], &b.Records[i])
		d.line = l
		var err error
		if w != nil {
			_, err = w.Write(l)
		} else {
			_, err = d.buf.Write(l)
		}
		if err != nil {
			return nil, err
		}
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	return d.buf.Bytes(), nil
}

// encodeZstd renders b as NDJSON compressed with zstd, one frame per
// zstdChunk bytes of text.
func (d *Dest) encodeZstd(b *sink.Batch) ([]byte, error) {
	if d.enc == nil {
		// SpeedFastest: on the corpus's lines 20% less CPU than
		// SpeedDefault for 1.6% more bytes (BenchmarkEncode); zstd was
		// most of the sink's CPU, a quarter of sluice's while ingest ran
		// (bench/sink-file.sh with PROFILE). A 1 MiB window rather than
		// 8: the same bytes on 8 MiB of the corpus at this level, and the
		// encoder's history an eighth as large; readers need no more.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithWindowSize(1<<20))
		if err != nil {
			return nil, err
		}
		d.enc = enc
	}
	d.plain, d.zbuf = d.plain[:0], d.zbuf[:0]
	for i := range b.Records {
		d.plain = appendLine(d.plain, &b.Records[i])
		if len(d.plain) >= zstdChunk || i == len(b.Records)-1 {
			d.zbuf = d.enc.EncodeAll(d.plain, d.zbuf)
			d.plain = d.plain[:0]
		}
	}
	return d.zbuf, nil
}

// appendLine appends r's NDJSON line.
func appendLine(l []byte, r *sink.Record) []byte {
	return append(sink.AppendJSON(l, r), '\n')
}

func (d *Dest) saveState(s state) error {
	b := binary.LittleEndian.AppendUint64(nil, s.seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.size))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.created))
	b = binary.LittleEndian.AppendUint64(b, s.pos.Segment)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.pos.Offset))
	err := vfs.ReplaceFile(d.statePath(), b, 0o644)
	if err != nil {
		return fmt.Errorf("file sink %q: save state: %w", d.cfg.Sink, err)
	}
	return nil
}

func (d *Dest) closeFile() {
	if d.f != nil {
		d.f.Close()
		d.f = nil
	}
}

// Close closes the current file. Idempotent.
func (d *Dest) Close() error {
	d.closeFile()
	if d.enc != nil {
		d.enc.Close()
		d.enc = nil
	}
	return nil
}
