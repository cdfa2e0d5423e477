package rows_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/v<Version>.rows from what the encoder makes")

// goldenRoutes are the routes of the Version2 golden block: records 1
// and 4 to archive and pg, record 3 to archive (record 2's route is
// dropped with it, and never reaches the block).
var goldenRoutes = map[int]uint16{1: 2, 2: 1, 3: 1, 4: 2}

// goldenReceiveTime is the receive time of the golden batch, which the
// record without a timestamp takes.
const goldenReceiveTime int64 = 1768464005000000000

// encodeGolden parses testdata/golden/input.txt (JSON lines, one without
// a timestamp, one earlier than the line before it, a syslog line, a text
// line) as one batch, format "auto", the default record configuration,
// and encodes it for tenant "acme". With routed, some records carry the
// routes of goldenRoutes and record 2 is dropped: a Version2 block.
func encodeGolden(t *testing.T, routed bool) []byte {
	t.Helper()
	in, err := os.ReadFile("testdata/golden/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	p, err := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	b := &record.Batch{Data: in, ReceiveTime: goldenReceiveTime}
	if n := p.Parse(b, true); n != len(in) {
		t.Fatalf("parsed %d of %d bytes", n, len(in))
	}
	if routed {
		b.Routes = [][]string{{"archive"}, {"archive", "pg"}}
		for i, k := range goldenRoutes {
			b.Records[i].Route = k
		}
		b.Drop(2)
	}
	var enc rows.Encoder
	return enc.Append(nil, "acme", b)
}

// TestGoldenRows decodes the rows blocks of testdata/golden, one per
// frozen version (v1.rows: written by encodeGolden at Version 1; v2.rows:
// the same batch with routes, as Version 2), and
// compares every row with vN.want (time, time source, stream, line,
// message and its place, fields with kind, flags, role, number and
// place), byte-exact: WAL segments hold these blocks, and a newer binary
// must replay what an older one wrote. The .want files were dumped by
// dumpBlock when the blocks were added and checked by hand against
// input.txt. Only the current version's block may be rewritten
// (-update); a new version adds its own files and keeps the old ones.
func TestGoldenRows(t *testing.T) {
	current := filepath.Join("testdata", "golden", fmt.Sprintf("v%d.rows", rows.Version))
	if *update {
		if err := os.WriteFile(current, encodeGolden(t, true), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("version=%d", v), func(t *testing.T) {
			path := filepath.Join("testdata", "golden", fmt.Sprintf("v%d", v))
			data, err := os.ReadFile(path + ".rows")
			if err != nil {
				t.Fatal(err)
			}
			blk, err := rows.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			got := dumpBlock(blk)
			want, err := os.ReadFile(path + ".want")
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s.rows decodes differently from %s.want: old WAL payloads no longer read as written\n got:\n%s", path, path, got)
			}
		})
	}
	// A batch without routes is still written as Version1, byte for
	// byte: that file is never rewritten.
	for v, routed := range map[int]bool{1: false, 2: true} {
		t.Run(fmt.Sprintf("encoder/version=%d", v), func(t *testing.T) {
			file := filepath.Join("testdata", "golden", fmt.Sprintf("v%d.rows", v))
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeGolden(t, routed); !bytes.Equal(got, want) {
				t.Errorf("the encoder no longer writes %s from input.txt: if the format changed, that takes a new Version (then -update writes its file); if the parse of input.txt changed, -update and check the dump against %s.want by hand", file, strings.TrimSuffix(file, ".rows"))
			}
		})
	}
}

// dumpBlock renders a decoded block: its header, then every member of
// every row, the byte slices quoted.
func dumpBlock(b *rows.Block) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "tenant %q receive %d\n", b.Tenant, b.ReceiveTime)
	fmt.Fprintf(&sb, "names %q\n", b.Names)
	for i, ls := range b.Streams {
		fmt.Fprintf(&sb, "stream %d %s\n", i, ls)
	}
	for i, names := range b.Routes {
		fmt.Fprintf(&sb, "route %d %q\n", i+1, names)
	}
	var r rows.Row
	var fields []rows.Field
	for i, ref := range b.Rows {
		fields = b.Row(i, &r, fields)
		fmt.Fprintf(&sb, "row %d time %d source %d stream %d (ref time %d stream %d off %d)\n",
			i, r.Time, r.TimeSource, r.Stream, ref.Time, ref.Stream, ref.Off)
		if r.Route != 0 || b.RowRoutes != nil {
			fmt.Fprintf(&sb, "  route %d (ref %d)\n", r.Route, b.RowRoutes[i])
		}
		fmt.Fprintf(&sb, "  line %s\n", strconv.Quote(string(r.Line)))
		msgAt := "inline"
		if r.MsgInLine {
			msgAt = fmt.Sprintf("at %d", r.MsgOff)
		}
		fmt.Fprintf(&sb, "  msg %s flags %d %s\n", strconv.Quote(string(r.Msg)), r.MsgFlags, msgAt)
		for _, f := range r.Fields {
			at := "inline"
			if f.InLine {
				at = fmt.Sprintf("at %d", f.Off)
			}
			fmt.Fprintf(&sb, "  field %s=%s kind %s flags %d role %d num %d %s\n",
				b.Names[f.Name], strconv.Quote(string(f.Value)), f.Kind, f.Flags, f.Role, f.Num, at)
		}
	}
	return sb.String()
}
