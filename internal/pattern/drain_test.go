package pattern

import (
	"fmt"
	"reflect"
	"testing"
)

func TestMiner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // patterns, most lines first
	}{
		{
			name: "logfmt values vary",
			lines: []string{
				`ts=2024-03-30T23:03:40 caller=grpc_logging.go:66 level=info method=/cortex.Ingester/Push duration=200ms msg=gRPC`,
				`ts=2024-03-30T23:03:41 caller=grpc_logging.go:66 level=info method=/cortex.Ingester/Push duration=500ms msg=gRPC`,
				`ts=2024-03-30T23:03:42 caller=grpc_logging.go:66 level=info method=/cortex.Ingester/Push duration=7ms msg=gRPC`,
			},
			want: []string{`ts=<_> caller=grpc_logging.go:66 level=info method=/cortex.Ingester/Push duration=<_> msg=gRPC`},
		},
		{
			name: "two statements stay apart",
			lines: []string{
				`GET /users/1 200 12ms`,
				`user alice logged in from 10.0.0.1`,
				`GET /users/2 200 9ms`,
				`user bob logged in from 10.0.0.7`,
				`GET /orders/9 404 3ms`,
			},
			want: []string{`GET <_> <_> <_>`, `user <_> logged in from <_>`},
		},
		{
			name: "numbers are values from the first line",
			lines: []string{
				`retrying in 5 seconds`,
			},
			want: []string{`retrying in <_> seconds`},
		},
		{
			name: "json keys are the frame",
			lines: []string{
				`{"level":"info","msg":"cache miss","key":"a1"}`,
				`{"level":"info","msg":"cache miss","key":"b7"}`,
			},
			want: []string{`{"level":"info","msg":"cache miss","key":"<_>"}`},
		},
		{
			name: "same keys, other statements",
			lines: []string{
				`level=info msg="cache miss for key k1" ip=10.0.0.1`,
				`level=error msg="payment failed for order 7" ip=10.0.0.2`,
				`level=info msg="cache miss for key k9" ip=10.0.0.3`,
				`order 1003: card declined`,
				`order 1008: card declined`,
			},
			want: []string{`level=info msg="cache miss for key <_>" ip=<_>`, `order <_>: card declined`, `level=error msg="payment failed for order <_>" ip=<_>`},
		},
		{
			name:  "only values: no pattern",
			lines: []string{`12:00:01 42`, `12:00:02 43`},
			want:  []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMiner(Options{})
			for i, l := range tc.lines {
				if !m.Add(int64(i), []byte(l)) {
					t.Fatalf("line %d dropped", i)
				}
			}
			got := []string{}
			for _, p := range m.Patterns() {
				got = append(got, p.Text)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("patterns\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMinerSamples(t *testing.T) {
	m := NewMiner(Options{Step: 10})
	for i, ts := range []int64{3, 9, 12, 25, 27, -1} {
		m.Add(ts, fmt.Appendf(nil, "request %d done", i))
	}
	ps := m.Patterns()
	if len(ps) != 1 || ps[0].Count != 6 {
		t.Fatalf("patterns %+v", ps)
	}
	want := []Sample{{-10, 1}, {0, 2}, {10, 1}, {20, 2}}
	if !reflect.DeepEqual(ps[0].Samples, want) {
		t.Errorf("samples %v, want %v", ps[0].Samples, want)
	}
}

func TestMinerMaxClusters(t *testing.T) {
	m := NewMiner(Options{MaxClusters: 2})
	for _, l := range []string{"alpha one", "beta two three", "gamma four five six", "alpha one"} {
		m.Add(0, []byte(l))
	}
	if m.Dropped != 1 {
		t.Errorf("dropped %d, want 1", m.Dropped)
	}
	if ps := m.Patterns(); len(ps) != 2 || ps[0].Text != "alpha one" || ps[0].Count != 2 {
		t.Errorf("patterns %+v", ps)
	}
}

func FuzzMiner(f *testing.F) {
	f.Add("GET /users/1 200 12ms", "GET /users/2 200 9ms")
	f.Add(`{"a":"b"}`, `{"a":"c"}`)
	f.Add("", " \t ")
	f.Fuzz(func(t *testing.T, a, b string) {
		m := NewMiner(Options{MaxClusters: 4})
		m.Add(1, []byte(a))
		m.Add(2, []byte(b))
		var n int64
		for _, p := range m.Patterns() {
			n += p.Count
		}
		if n > 2 {
			t.Fatalf("%d lines counted of 2", n)
		}
	})
}

func TestTokenizeKeys(t *testing.T) {
	var keys []string
	for _, tk := range tokenize(nil, `{"took_ms":12} level=info at 12:00:01 order 1003: declined error: boom`) {
		if tk.key {
			keys = append(keys, tk.text)
		}
	}
	if want := []string{"took_ms", "level", "error"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
}
