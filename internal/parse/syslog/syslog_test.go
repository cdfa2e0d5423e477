package syslog

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

var dump = flag.Bool("dump", false, "log each case's result as Go source instead of checking it")

func parse(input string) parsetest.Result {
	return parsetest.Run(&Parser{}, record.DefaultConfig(), []byte(input), nil)
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got := parse(tc.in)
			if *dump {
				var sb strings.Builder
				fmt.Fprintf(&sb, "out: []string{\n")
				for _, r := range got.Records {
					fmt.Fprintf(&sb, "\t%#q,\n", r)
				}
				fmt.Fprintf(&sb, "},\nerrs: []string{\n")
				for _, e := range got.Errors {
					fmt.Fprintf(&sb, "\t%#q,\n", e)
				}
				fmt.Fprintf(&sb, "},\n")
				t.Log("\n" + sb.String())
				return
			}
			if !slices.Equal(got.Records, tc.out) {
				t.Errorf("records:\n got %q\nwant %q", got.Records, tc.out)
			}
			if !slices.Equal(got.Errors, tc.errs) {
				t.Errorf("errors:\n got %q\nwant %q", got.Errors, tc.errs)
			}
		})
	}
}

// TestParseSpan checks ParseLine on a message that holds newlines, as an
// octet-counted frame may: the span is the message, whatever it holds.
func TestParseSpan(t *testing.T) {
	msg := "<13>1 2026-01-15T08:00:00Z h app - - [a b=\"x\ny\"] first\nsecond\n"
	b := &record.Batch{Data: []byte("junk" + msg + "junk"), ReceiveTime: parsetest.ReceiveTime}
	bl := record.NewBuilder(record.DefaultConfig())
	bl.Start(b)
	var p Parser
	p.ParseLine(bl, record.Span{Off: 4, Len: uint32(len(msg))})
	if len(b.Errors) != 0 || len(b.Records) != 1 {
		t.Fatalf("got %d records, errors %v", len(b.Records), b.Errors)
	}
	got := string(b.AppendJSON(nil, 0))
	want := `{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"first\nsecond\n","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"h","app_name":"app","sd.a.b":"x\ny"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestLevel(t *testing.T) {
	for sev, want := range []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "", ""} {
		if got := Level(sev); got != want {
			t.Errorf("Level(%d) = %q, want %q", sev, got, want)
		}
	}
	if got := Level(-1); got != "" {
		t.Errorf("Level(-1) = %q", got)
	}
}

// TestNoAllocs checks that a warm parser and builder allocate nothing per
// line, for each header shape.
func TestNoAllocs(t *testing.T) {
	for _, line := range []string{
		`<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 42 ID47 [exampleSDID@32473 iut="3" eventSource="App\"lication" eventID="1011"] ` + "\xEF\xBB\xBFAn application event log entry",
		"<34>Oct 11 22:14:15 mymachine su[42]: 'su root' failed for lonvick on /dev/pts/8",
		"Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4 ",
	} {
		if n := parsetest.AllocsPerLine(t, &Parser{}, line); n != 0 {
			t.Errorf("%q: %v allocs per line, want 0", line, n)
		}
	}
}
