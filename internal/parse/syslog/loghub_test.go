package syslog

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// loghubDir is where ../shared keeps the Loghub samples.
var loghubDir = filepath.Join("..", "..", "..", "..", "shared", "loghub")

// TestLoghub parses every line of the Loghub syslog-style samples and
// checks hostname, app_name, proc_id, the time and the message against
// the samples' structured ground truth.
// The CSVs name their columns differently: OpenSSH's "Component" column
// holds the hostname (LabSZ) and its tag is always sshd.
func TestLoghub(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		hostCol, appCol, pidCol string
		app                     string // the app_name of every line, when appCol is empty
	}{
		{name: "Linux", hostCol: "Level", appCol: "Component", pidCol: "PID"},
		{name: "Mac", hostCol: "User", appCol: "Component", pidCol: "PID"},
		{name: "OpenSSH", hostCol: "Component", app: "sshd", pidCol: "Pid"},
	} {
		t.Run("system="+tc.name, func(t *testing.T) {
			logPath := filepath.Join(loghubDir, tc.name, tc.name+"_2k.log")
			data, err := os.ReadFile(logPath)
			if err != nil {
				t.Skipf("Loghub sample not found at %s (../shared is absent): %v", logPath, err)
			}
			rows := readCSV(t, logPath+"_structured.csv")

			b := &record.Batch{Data: data, ReceiveTime: parsetest.ReceiveTime}
			bl := record.NewBuilder(record.DefaultConfig())
			bl.Start(b)
			var sp lines.Splitter
			lines.Run(&sp, bl, &Parser{}, true)
			for _, e := range b.Errors {
				t.Errorf("line %d:%d: %s", e.Line, e.Col, e.Msg)
			}
			if len(b.Records) != len(rows) {
				t.Fatalf("%d records, %d rows of ground truth", len(b.Records), len(rows))
			}
			bad := 0
			for i, row := range rows {
				got := fieldsOf(b, i)
				app := tc.app
				if tc.appCol != "" {
					app = row[tc.appCol]
				}
				want := map[string]string{"hostname": row[tc.hostCol], "app_name": app, "proc_id": row[tc.pidCol]}
				month, day, clock := row["Month"], row["Date"], row["Time"]
				if tc.name == "OpenSSH" {
					month, day = row["Date"], row["Day"]
				}
				d, _ := strconv.Atoi(day)
				wantTime := month + " " + strconv.Itoa(d) + " " + clock
				gotTime := time.Unix(0, b.Records[i].Time).UTC().Format("Jan 2 15:04:05")
				for _, k := range []string{"hostname", "app_name", "proc_id"} {
					if got[k] != want[k] {
						bad++
						t.Errorf("line %s: %s = %q, want %q\n%s", row["LineId"], k, got[k], want[k], b.Bytes(b.Records[i].Line))
					}
				}
				msg := strings.TrimSpace(got["_msg"])
				if tc.name == "Mac" && strings.HasPrefix(msg, "(") {
					// macOS's "TAG[PID] (SENDER): MSG" keeps "(SENDER): " in
					// MSG; Loghub leaves it out of Content.
					if _, rest, ok := strings.Cut(msg, "): "); ok && rest == row["Content"] {
						msg = rest
					}
				}
				if msg != row["Content"] {
					bad++
					t.Errorf("line %s: msg %q, want %q", row["LineId"], msg, row["Content"])
				}
				if gotTime != wantTime {
					bad++
					t.Errorf("line %s: time %s, want %s", row["LineId"], gotTime, wantTime)
				}
				if bad > 10 {
					t.Fatal("too many mismatches")
				}
			}
		})
	}
}

// fieldsOf returns record i's string fields by name, and its message as
// "_msg".
func fieldsOf(b *record.Batch, i int) map[string]string {
	m := map[string]string{"_msg": string(b.AppendMsg(nil, i))}
	fs := b.RecordFields(i)
	for j := range fs {
		m[b.Name(&fs[j])] = string(b.AppendString(nil, &fs[j]))
	}
	return m
}

// readCSV reads a Loghub structured CSV into one map per row, by column.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read ground truth: %v", err)
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatalf("parse ground truth %s: %v", path, err)
	}
	head := recs[0]
	rows := make([]map[string]string, 0, len(recs)-1)
	for _, r := range recs[1:] {
		row := make(map[string]string, len(head))
		for k, h := range head {
			row[h] = strings.TrimSpace(r[k])
		}
		rows = append(rows, row)
	}
	return rows
}
