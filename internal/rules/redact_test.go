package rules

import (
	"fmt"
	"slices"
	"testing"
)

// redactString is r.redact of in as a string: in itself when r replaces
// nothing (and so appends nothing).
func redactString(r *redactor, in string) (string, int) {
	out, n, _ := r.redact(nil, []byte(in), nil)
	if n == 0 {
		if len(out) != 0 {
			return "appended " + string(out) + " for no replacement", 0
		}
		return in, 0
	}
	return string(out), n
}

func TestDetectors(t *testing.T) {
	cases := []struct {
		detector, in, want string
	}{
		// e-mail addresses, and strings that only look like them
		{"email", "login bob@example.com ok", "login <redacted> ok"},
		{"email", "to: first.last+tag@mail.corp.co.uk,", "to: <redacted>,"},
		{"email", `{"email":"a_b-c@x-y.io"}`, `{"email":"<redacted>"}`},
		{"email", "user@localhost", "user@localhost"},
		{"email", "@example.com and foo@ and a@b", "@example.com and foo@ and a@b"},
		{"email", "git@github.com:org/repo", "<redacted>:org/repo"},
		{"email", "image@sha256:abc", "image@sha256:abc"},
		{"email", "foo@bar.c", "foo@bar.c"},
		{"email", "x@-bad.com", "x@-bad.com"},
		// IPv4
		{"ipv4", "from 10.0.0.1:443 to 192.168.1.254", "from <redacted>:443 to <redacted>"},
		{"ipv4", "version 1.2.3.4.5", "version 1.2.3.4.5"},
		{"ipv4", "999.1.1.1", "999.1.1.1"},
		{"ipv4", "v1.2.3", "v1.2.3"},
		{"ipv4", "ip=8.8.8.8.", "ip=<redacted>."},
		// IPv6
		{"ipv6", "client 2001:db8::1 connected", "client <redacted> connected"},
		{"ipv6", "addr=fe80::1%eth0", "addr=<redacted>"},
		{"ipv6", "[::1]:8080", "[<redacted>]:8080"},
		{"ipv6", "at 12:30:45 and Foo::Bar", "at 12:30:45 and Foo::Bar"},
		{"ipv6", "mac 00:1a:2b:3c:4d:5e", "mac 00:1a:2b:3c:4d:5e"},
		// card numbers: the Luhn check decides
		{"card", "card 4111 1111 1111 1111 ok", "card <redacted> ok"},
		{"card", "card=4111-1111-1111-1111", "card=<redacted>"},
		{"card", "pan 5500005555555559", "pan <redacted>"},
		{"card", "amex 378282246310005.", "amex <redacted>."},
		{"card", "card 4111 1111 1111 1112", "card 4111 1111 1111 1112"},
		{"card", "order 1234567890123", "order 1234567890123"},
		{"card", "ts 1768464000000000000", "ts 1768464000000000000"},
		{"card", "id abc4111111111111111", "id abc4111111111111111"},
		{"card", "short 4111111", "short 4111111"},
		// JWTs and bearer tokens
		{"jwt", "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk end", "t=<redacted> end"},
		{"jwt", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "<redacted>"},
		{"jwt", "eyJ alone and eyJabc.def", "eyJ alone and eyJabc.def"},
		{"bearer", "Authorization: Bearer abcdef0123456789", "Authorization: Bearer <redacted>"},
		{"bearer", "authorization=bearer%20x", "authorization=bearer%20x"},
		{"bearer", "the bearer of bad news", "the bearer of bad news"},
		// AWS access key ids
		{"aws_key", "key AKIAIOSFODNN7EXAMPLE used", "key <redacted> used"},
		{"aws_key", "ASIAY34FZKBOKMUTVV7A", "<redacted>"},
		{"aws_key", "AKIAIOSFODNN7EXAMPLEX", "AKIAIOSFODNN7EXAMPLEX"},
		{"aws_key", "AKIA-short", "AKIA-short"},
		// secret pairs in logfmt, JSON and text
		{"secret_pairs", "user=bob password=hunter2 ok=1", "user=bob password=<redacted> ok=1"},
		{"secret_pairs", `user=bob password="hunter two" ok=1`, `user=bob password="<redacted>" ok=1`},
		{"secret_pairs", `{"user":"bob","password":"hunter2","n":1}`, `{"user":"bob","password":"<redacted>","n":1}`},
		{"secret_pairs", `{"db_password": "p\"w", "x": 2}`, `{"db_password": "<redacted>", "x": 2}`},
		{"secret_pairs", "client_secret: s3cr3t, next", "client_secret: <redacted>, next"},
		{"secret_pairs", "GET /cb?code=1&access_token=abc123&x=2", "GET /cb?code=1&access_token=<redacted>&x=2"},
		{"secret_pairs", "API_KEY=xyz", "API_KEY=<redacted>"},
		{"secret_pairs", "the password was reset", "the password was reset"},
		{"secret_pairs", "tokenizer ran in 3ms", "tokenizer ran in 3ms"},
		{"secret_pairs", "user=bob status=ok", "user=bob status=ok"},
	}
	for _, c := range cases {
		t.Run(c.detector+"/"+c.in, func(t *testing.T) {
			r := newRedactor(&redactSpec{detectors: []string{c.detector}, replacement: DefaultReplacement})
			got, n := redactString(r, c.in)
			if string(got) != c.want {
				t.Errorf("%s(%q) = %q, want %q", c.detector, c.in, got, c.want)
			}
			if (n > 0) != (c.in != c.want) {
				t.Errorf("%d replacements for %q -> %q", n, c.in, got)
			}
		})
	}
}

func TestLuhn(t *testing.T) {
	for s, want := range map[string]bool{
		"4111111111111111": true, "4111 1111 1111 1111": true, "4012888888881881": true, "6011111111111117": true,
		"4111111111111112": false, "1234567812345678": false, "411111111111": false, "41111111111111111111": false,
	} {
		if got := luhn([]byte(s)); got != want {
			t.Errorf("luhn(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestRedactPatterns(t *testing.T) {
	r := newRedactor(&redactSpec{
		replacement: "XX",
		detectors:   []string{"email"},
		patterns: []patternSpec{
			{regex: `ssn=(\d{3})-\d{2}-(\d{4})`, replace: "ssn=$1-**-$2"},
			{regex: `session=\w+`, replace: "session=?"},
		},
	})
	got, n := redactString(r, "ssn=123-45-6789 session=abc mail a@b.io")
	if string(got) != "ssn=123-**-6789 session=? mail XX" || n != 3 {
		t.Errorf("got %q (%d replacements)", got, n)
	}
	// Overlapping detectors replace the union once.
	r = newRedactor(&redactSpec{replacement: "XX", detectors: []string{"email", "secret_pairs"}})
	got, _ = redactString(r, "password=bob@x.com next")
	if string(got) != "password=XX next" {
		t.Errorf("overlap: got %q", got)
	}
	// A field whose name is a secret key is replaced whole.
	r = newRedactor(&redactSpec{replacement: "XX", detectors: []string{"secret_pairs"}})
	if got, n, _ := r.field(nil, "db_password", []byte("hunter2"), nil); string(got) != "XX" || n != 1 {
		t.Errorf("field: %q %d", got, n)
	}
	if got, n, _ := r.field(nil, "user", []byte("hunter2"), nil); len(got) != 0 || n != 0 {
		t.Errorf("field: %q %d", got, n)
	}
}

// FuzzDetectorWindow checks the detectors that run their regexp on the
// runs of bytes around an anchor (find) against running it over the
// whole text.
func FuzzDetectorWindow(f *testing.F) {
	for _, seed := range []string{
		"login bob@example.com ok", "a@b@c.com", "@@x.io a@ b@c.de,d@e.fr", "x.@y.com .a@b.com a..b@c.com",
		`{"email":"a_b-c@x-y.io","n":"b@c.d"}`, "mail-to:a%b+c@x.y.zz!", "é@é.com a@b.c1 a@b.cd-",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for name, d := range detectors {
			if d.class == nil {
				continue
			}
			whole := *d
			whole.class = nil
			got := d.find(nil, []byte(text))
			want := whole.find(nil, []byte(text))
			if !slices.Equal(got, want) {
				t.Fatalf("%s(%q): around %q: %v, whole text: %v", name, text, d.anchor, got, want)
			}
		}
	})
}

// BenchmarkRedactLine reports the cost of redacting a line of the
// canonical corpus's size with an e-mail address in it, the e-mail
// detector's regexp run on the runs around each '@' (window=true) or
// over the whole line (window=false).
func BenchmarkRedactLine(b *testing.B) {
	line := []byte(`{"ts":1768464000000,"level":"error","msg":"retrying request","service":"checkout","host":"node-24","trace_id":"7ce42c8218072e8c35bf992dc9e9c616","http":{"method":"PUT","path":"/api/v1/cart/items","status":502,"latency_ms":42.078,"bytes":201105,"user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},"user":{"id":4972606,"email":"jane.doe@example.com"}}`)
	for _, window := range []bool{true, false} {
		b.Run(fmt.Sprintf("window=%v", window), func(b *testing.B) {
			r := newRedactor(&redactSpec{detectors: []string{"email", "secret_pairs"}, replacement: DefaultReplacement})
			if !window {
				for i, d := range r.detectors {
					whole := *d
					whole.class = nil
					r.detectors[i] = &whole
				}
			}
			var dst []byte
			var spans [][2]int
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _, spans = r.redact(dst[:0], line, spans)
			}
		})
	}
}
