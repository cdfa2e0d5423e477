package file

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

// readAll decodes every file of d, in order, into its lines.
func readAll(t *testing.T, d *Dest) []map[string]any {
	t.Helper()
	files, err := d.Files()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		switch d.cfg.Compression {
		case "gzip":
			gz, err := gzip.NewReader(f)
			if err == io.EOF {
				f.Close()
				continue // an empty file
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r = gz
		case "zstd":
			zr, err := zstd.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			r = zr
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: line %q: %v", name, sc.Text(), err)
			}
			out = append(out, m)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
	}
	return out
}

// deliverAll reads everything committed in l after from into one batch
// and delivers it.
func deliverAll(t *testing.T, l *wal.Log, d *Dest, from wal.Pos) wal.Pos {
	t.Helper()
	c := l.Cursor(from)
	defer c.Close()
	var recs []sink.Record
	for {
		p, at, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		blk, err := rows.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		var r rows.Row
		var fs []rows.Field
		for i := range blk.Rows {
			fs = blk.Row(i, &r, fs)
			recs = append(recs, sink.Record{Time: r.Time, Tenant: blk.Tenant, Labels: blk.Streams[r.Stream],
				LabelsJSON: json.RawMessage(`{}`), FieldsJSON: json.RawMessage(`{}`), Line: append([]byte(nil), r.Line...), Pos: at})
		}
	}
	b := &sink.Batch{Records: recs, End: c.Pos()}
	if _, err := d.Deliver(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return b.End
}

func TestRotationCompressionAndRestart(t *testing.T) {
	for _, comp := range []string{"none", "gzip", "zstd"} {
		t.Run("compression="+comp, func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			clock := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
			open := func() *Dest {
				d, err := New(Config{Sink: "out", Dir: filepath.Join(dir, "out"), MaxBytes: 600, MaxAge: time.Minute, Compression: comp})
				if err != nil {
					t.Fatal(err)
				}
				d.now = func() time.Time { return clock }
				return d
			}
			d := open()
			pos, ok, err := d.Open(context.Background())
			if err != nil || ok {
				t.Fatalf("first Open: %v, %v (want no position)", ok, err)
			}
			pos = l.Committed()
			n := 0
			batch := func(k int) {
				for range k {
					sinktest.AppendLines(t, l, "t1", fmt.Sprintf(`{"service":"api","msg":"line %d \"quoted\" %s"}`, n, strings.Repeat("y", 40)))
					n++
				}
				pos = deliverAll(t, l, d, pos)
			}
			for range 6 {
				batch(5) // about 450 bytes a batch uncompressed: a file every two
			}
			files, _ := d.Files()
			if comp == "none" && len(files) < 3 {
				t.Fatalf("%d files after 6 batches over 600 bytes each, want rotation by size", len(files))
			}
			// Rotation by age.
			before := len(files)
			clock = clock.Add(2 * time.Minute)
			batch(1)
			if files, _ = d.Files(); len(files) != before+1 {
				t.Fatalf("%d files after the age limit, want %d", len(files), before+1)
			}
			// A crash after a write but before the state: the tail is
			// undone and the batch is delivered again, once.
			if _, err := d.f.Write([]byte("a batch whose state was never saved")); err != nil {
				t.Fatal(err)
			}
			d.Close()
			d = open()
			p2, ok, err := d.Open(context.Background())
			if err != nil || !ok || p2 != pos {
				t.Fatalf("reopen: %v %v %v, want the position %v", p2, ok, err, pos)
			}
			batch(3)
			got := readAll(t, d)
			if len(got) != n {
				t.Fatalf("%d lines in the files, want %d", len(got), n)
			}
			for i, m := range got {
				if want := fmt.Sprintf(`{"service":"api","msg":"line %d \"quoted\" `, i); !strings.HasPrefix(m["line"].(string), want) || m["tenant"] != "t1" {
					t.Fatalf("line %d: %v", i, m)
				}
			}
			d.Close()
		})
	}
}

func TestBadCompression(t *testing.T) {
	if _, err := New(Config{Sink: "x", Dir: t.TempDir(), Compression: "lz5"}); err == nil || !strings.Contains(err.Error(), `compression "lz5"`) {
		t.Fatalf("New with lz5: %v", err)
	}
}

// TestZstdChunks: a batch of more NDJSON than zstdChunk is compressed as
// several frames that read back, as one stream, to the batch's NDJSON.
func TestZstdChunks(t *testing.T) {
	batch := benchBatch()
	plain, err := (&Dest{cfg: Config{Compression: "none"}}).encode(batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) <= 2*zstdChunk {
		t.Fatalf("the batch has %d bytes of NDJSON, want more than two chunks", len(plain))
	}
	d := &Dest{cfg: Config{Compression: "zstd"}}
	piece, err := d.encode(batch)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(bytes.NewReader(piece))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("decompressed %d bytes, not the batch's %d bytes of NDJSON", len(got), len(plain))
	}
	if n := bytes.Count(piece, []byte{0x28, 0xb5, 0x2f, 0xfd}); n < 3 {
		t.Fatalf("%d zstd frame magics in the piece, want one per chunk (3 or more)", n)
	}
}

// TestCompressionChangedRefused: a sink whose compression changed finds
// no file of the state's name; Open refuses, naming the file there is,
// rather than truncate a new file to the recorded size (zeros, then the
// next batch), and the old file is left as it was.
func TestCompressionChangedRefused(t *testing.T) {
	dir := t.TempDir()
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := filepath.Join(dir, "out")
	d, err := New(Config{Sink: "out", Dir: out, Compression: "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	pos, _, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sinktest.AppendLines(t, l, "t1", `{"msg":"one"}`)
	deliverAll(t, l, d, pos)
	d.Close()
	old := filepath.Join(out, "out-00000001.ndjson.zst")
	before, err := os.ReadFile(old)
	if err != nil || len(before) == 0 {
		t.Fatalf("the zstd file: %d bytes, %v", len(before), err)
	}
	d2, err := New(Config{Sink: "out", Dir: out, Compression: "none"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = d2.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "out-00000001.ndjson.zst is there: was the compression changed?") ||
		!errors.Is(err, sink.ErrPermanent) {
		t.Fatalf("Open after a change of compression: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "out-00000001.ndjson")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file of the new compression was made: %v", err)
	}
	if after, err := os.ReadFile(old); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the zstd file changed: %d bytes, %v", len(after), err)
	}
}
