package pattern

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// loghubDir holds Loghub's 2k-line samples (see its README for the terms:
// read them from there, never copy them into the repository).
const loghubDir = "../../../../shared/loghub"

// How a system's timestamp is checked against its CSV.
const (
	timeNone  = iota // not checked: see why
	timeFull         // the CSV's columns, joined by spaces, read with layout
	timeEpoch        // the CSV column holds Unix seconds
	timeClock        // no year in the line: month, day and clock must agree
)

// loghubCase is one system: the pattern that parses all its lines and
// which capture must equal which column of its structured CSV.
type loghubCase struct {
	system string
	expr   string
	// cols maps a capture to the CSV column it must equal on every line.
	cols map[string]string
	// pidCol, when set, is the CSV column of a process id that the
	// line writes as "component[pid]" or leaves out: the pattern syntax
	// has no optional parts, so the component capture holds both, and
	// is checked against Component + "[" + pid + "]".
	pidCol string

	timeKind int
	timeCols []string // CSV columns holding the time
	layout   string   // time.Parse layout for timeFull and timeClock
	why      string   // for timeNone: why the timestamp is not checked
	// tl is the source's timestamp layout, for formats that cannot be
	// detected: set in the pattern's options and the record config, as
	// `sluice parse --time-layout` sets them.
	tl timestamp.Layout
}

var loghubCases = []loghubCase{
	{
		system:   "Android",
		expr:     `<time> <pid> <tid> <level> <component>: <msg>`,
		cols:     map[string]string{"pid": "Pid", "tid": "Tid", "level": "Level", "component": "Component", "msg": "Content"},
		timeKind: timeClock, timeCols: []string{"Date", "Time"}, layout: "01-02 15:04:05.000", tl: timestamp.Logcat,
	},
	{
		system:   "Apache",
		expr:     `[<time>] [<level>] <msg>`,
		cols:     map[string]string{"level": "Level", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Time"}, layout: "Mon Jan 02 15:04:05 2006",
	},
	{
		system:   "BGL",
		expr:     `<label> <epoch> <day> <node> <time> <node_repeat> <type> <component> <level> <msg>`,
		cols:     map[string]string{"label": "Label", "epoch": "Timestamp", "node": "Node", "type": "Type", "component": "Component", "level": "Level", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Time"}, layout: "2006-01-02-15.04.05.000000",
	},
	{
		system:   "HDFS",
		expr:     `<time> <pid> <level> <component>: <msg>`,
		cols:     map[string]string{"pid": "Pid", "level": "Level", "component": "Component", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Date", "Time"}, layout: "060102 150405", tl: timestamp.HDFS,
	},
	{
		system:   "HPC",
		expr:     `<logid> <node> <component> <state> <time> <flag> <msg>`,
		cols:     map[string]string{"logid": "LogId", "node": "Node", "component": "Component", "state": "State", "flag": "Flag", "msg": "Content"},
		timeKind: timeEpoch, timeCols: []string{"Time"},
	},
	{
		system:   "Hadoop",
		expr:     `<time> <level> [<process>] <component>: <msg>`,
		cols:     map[string]string{"level": "Level", "process": "Process", "component": "Component", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Date", "Time"}, layout: "2006-01-02 15:04:05,000",
	},
	{
		system:   "HealthApp",
		expr:     `<time>|<component>|<pid>|<msg>`,
		cols:     map[string]string{"component": "Component", "pid": "Pid", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Time"}, // see parseHealthApp
	},
	{
		system:   "Linux",
		expr:     `<time> <level> <component>: <msg>`,
		cols:     map[string]string{"level": "Level", "component": "Component", "msg": "Content"},
		pidCol:   "PID",
		timeKind: timeClock, timeCols: []string{"Month", "Date", "Time"}, layout: "Jan 2 15:04:05",
	},
	{
		system:   "Mac",
		expr:     `<time> <user> <component>[<pid>]<_>: <msg>`,
		cols:     map[string]string{"user": "User", "component": "Component", "pid": "PID", "msg": "Content"},
		timeKind: timeClock, timeCols: []string{"Month", "Date", "Time"}, layout: "Jan 2 15:04:05",
	},
	{
		system:   "OpenSSH",
		expr:     `<time> <component> sshd[<pid>]: <msg>`,
		cols:     map[string]string{"component": "Component", "pid": "Pid", "msg": "Content"},
		timeKind: timeClock, timeCols: []string{"Date", "Day", "Time"}, layout: "Jan 2 15:04:05",
	},
	{
		system:   "OpenStack",
		expr:     `<logrecord> <time> <pid> <level> <component> [<addr>] <msg>`,
		cols:     map[string]string{"logrecord": "Logrecord", "pid": "Pid", "level": "Level", "component": "Component", "addr": "ADDR", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Date", "Time"}, layout: "2006-01-02 15:04:05.000",
	},
	{
		system: "Proxifier",
		expr:   `[<time>] <program> - <msg>`,
		cols:   map[string]string{"program": "Program", "msg": "Content"},
		why:    `"10.30 16:49:06" has no year and is no format timestamp.Parse knows`,
	},
	{
		system:   "Spark",
		expr:     `<time> <level> <component>: <msg>`,
		cols:     map[string]string{"level": "Level", "component": "Component", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Date", "Time"}, layout: "06/01/02 15:04:05", tl: timestamp.Spark,
	},
	{
		system:   "Thunderbird",
		expr:     `<label> <time> <day> <user> <month> <mday> <clock> <location> <component>: <msg>`,
		cols:     map[string]string{"label": "Label", "user": "User", "month": "Month", "mday": "Day", "clock": "Time", "location": "Location", "component": "Component", "msg": "Content"},
		pidCol:   "PID",
		timeKind: timeEpoch, timeCols: []string{"Timestamp"},
	},
	{
		system:   "Windows",
		expr:     `<time>, <level> <component> <msg>`,
		cols:     map[string]string{"level": "Level", "component": "Component", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Date", "Time"}, layout: "2006-01-02 15:04:05",
	},
	{
		system:   "Zookeeper",
		expr:     `<time> - <level> [<node>:<component>@<id>] - <msg>`,
		cols:     map[string]string{"level": "Level", "node": "Node", "component": "Component", "id": "Id", "msg": "Content"},
		timeKind: timeFull, timeCols: []string{"Date", "Time"}, layout: "2006-01-02 15:04:05,000",
	},
}

// TestLoghub parses each system's 2,000 lines with its pattern and checks
// that every line matched and that the captures and timestamps agree with
// Loghub's structured CSV.
func TestLoghub(t *testing.T) {
	if _, err := os.Stat(loghubDir); err != nil {
		t.Skipf("Loghub samples not found at %s: %v", loghubDir, err)
	}
	for _, tc := range loghubCases {
		t.Run("system="+tc.system, func(t *testing.T) {
			dir := filepath.Join(loghubDir, tc.system)
			data, err := os.ReadFile(filepath.Join(dir, tc.system+"_2k.log"))
			if err != nil {
				t.Fatal(err)
			}
			rows := readCSV(t, filepath.Join(dir, tc.system+"_2k.log_structured.csv"))
			p, err := CompileOptions(tc.expr, Options{TimeLayout: tc.tl})
			if err != nil {
				t.Fatal(err)
			}
			cfg := record.DefaultConfig()
			cfg.TimeLayout = tc.tl
			b := parseAll(t, p, cfg, data)
			if len(b.Records) != len(rows) {
				t.Fatalf("%d records for %d CSV rows", len(b.Records), len(rows))
			}
			bad := 0
			for i, row := range rows {
				if err := tc.check(b, i, row, len(p.Names())); err != nil {
					bad++
					if bad <= 5 {
						t.Errorf("line %s: %v\n  %s", row["LineId"], err, b.Bytes(b.Records[i].Line))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d lines disagree with the CSV", bad, len(rows))
			}
			timeNote := [...]string{timeNone: "not checked: " + tc.why, timeFull: "checked", timeEpoch: "checked (epoch)", timeClock: "month, day and clock checked (no year)"}[tc.timeKind]
			t.Logf("%d lines; captures checked against %d CSV columns; time %s", len(rows), len(tc.cols), timeNote)
		})
	}
}

// parseAll parses data as one input.
func parseAll(t *testing.T, p *Parser, cfg record.Config, data []byte) *record.Batch {
	t.Helper()
	bl := record.NewBuilder(cfg)
	b := &record.Batch{Data: data, ReceiveTime: parsetest.ReceiveTime}
	bl.Start(b)
	var sp lines.Splitter
	lines.Run(&sp, bl, p, true)
	for _, e := range b.Errors {
		t.Errorf("line error %s", e.Error())
	}
	return b
}

// check compares record i with its CSV row.
func (tc *loghubCase) check(b *record.Batch, i int, row map[string]string, named int) error {
	fields := b.RecordFields(i)
	if len(fields) != named {
		return fmt.Errorf("the pattern did not match (%d fields)", len(fields))
	}
	got := make(map[string]string, len(fields))
	for j := range fields {
		got[b.Name(&fields[j])] = string(b.AppendString(nil, &fields[j]))
	}
	for capture, col := range tc.cols {
		want, ok := row[col]
		if !ok {
			return fmt.Errorf("the CSV has no column %q", col)
		}
		if capture == "component" && tc.pidCol != "" && row[tc.pidCol] != "" {
			want += "[" + row[tc.pidCol] + "]"
		}
		g := got[capture]
		if capture == "msg" {
			// Loghub stripped each line before splitting it, so Content
			// lacks the trailing spaces that the message keeps.
			g = strings.TrimRight(g, " ")
		}
		if g != want {
			return fmt.Errorf("capture <%s> = %q, CSV %s = %q", capture, g, col, want)
		}
	}
	if tc.pidCol != "" && tc.cols["component"] == "" {
		return fmt.Errorf("pidCol needs a component column")
	}
	return tc.checkTime(&b.Records[i], row)
}

func (tc *loghubCase) checkTime(r *record.Record, row map[string]string) error {
	if tc.timeKind == timeNone {
		return nil
	}
	var vals []string
	for _, c := range tc.timeCols {
		vals = append(vals, row[c])
	}
	text := strings.Join(vals, " ")
	if r.TimeSource != record.FromData {
		return fmt.Errorf("no timestamp read; CSV has %q", text)
	}
	got := time.Unix(0, r.Time).UTC()
	var want time.Time
	switch tc.timeKind {
	case timeEpoch:
		sec, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return fmt.Errorf("CSV time %q: %v", text, err)
		}
		want = time.Unix(sec, 0).UTC()
	case timeFull, timeClock:
		var err error
		if tc.system == "HealthApp" {
			want, err = parseHealthApp(text)
		} else {
			want, err = time.Parse(tc.layout, text)
		}
		if err != nil {
			return fmt.Errorf("CSV time %q: %v", text, err)
		}
	}
	if tc.timeKind == timeClock {
		// The line has no year: the Builder took one from the receive time.
		want = want.AddDate(got.Year()-want.Year(), 0, 0)
	}
	if !got.Equal(want) {
		return fmt.Errorf("time %s, CSV %q is %s", got.Format(time.RFC3339Nano), text, want.Format(time.RFC3339Nano))
	}
	return nil
}

// parseHealthApp reads HealthApp's "20171223-22:15:29:606", whose clock
// fields have one or two digits ("22:16:0:119") and whose last field
// counts milliseconds: no time.Parse layout says that.
func parseHealthApp(s string) (time.Time, error) {
	date, clock, ok := strings.Cut(s, "-")
	day, err := time.Parse("20060102", date)
	if !ok || err != nil {
		return time.Time{}, fmt.Errorf("bad date in %q", s)
	}
	parts := strings.Split(clock, ":")
	if len(parts) != 4 {
		return time.Time{}, fmt.Errorf("bad clock in %q", s)
	}
	units := []time.Duration{time.Hour, time.Minute, time.Second, time.Millisecond}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return time.Time{}, fmt.Errorf("bad clock in %q", s)
		}
		day = day.Add(time.Duration(n) * units[i])
	}
	return day, nil
}

// readCSV reads a structured CSV into one map per row, keyed by column.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	rows := make([]map[string]string, 0, len(all)-1)
	for _, rec := range all[1:] {
		row := make(map[string]string, len(rec))
		for i, v := range rec {
			row[all[0][i]] = v
		}
		rows = append(rows, row)
	}
	return rows
}
