package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// secretPairsRe is the regexp the secret_pairs detector ran before
// scanSecretPairs: the reference it is checked against.
var secretPairsRe = regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9_.\-])"?` + secretKey + `"?\s*[:=]\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;&"'}\]]+)`)

// secretKeyRe is the regexp isSecretName replaced.
var secretKeyRe = regexp.MustCompile(`(?i)^` + secretKey + `$`)

// refSecretPairs finds what the regexp detector found in text.
func refSecretPairs(text []byte) [][2]int {
	d := &detector{re: secretPairsRe, group: 1}
	return d.findIn(nil, text, 0, len(text))
}

var secretPairsSeeds = []string{
	"user=bob password=hunter2 ok=1", `user=bob password="hunter two" ok=1`,
	`{"user":"bob","password":"hunter2","n":1}`, `{"db_password": "p\"w", "x": 2}`,
	"client_secret: s3cr3t, next", "GET /cb?code=1&access_token=abc123&x=2", "API_KEY=xyz",
	"the password was reset", "tokenizer ran in 3ms", "user=bob status=ok",
	// A key right after the value before it: the regexp's boundary was
	// that value's last byte, taken already.
	`password="a"token=b`, `password='a'token=b`, "password=a,token=b", `password="a""token"="b"`,
	// A key inside a value is not a key.
	"password=token=abc", "a=password:x", `{"k":"password=x"}`,
	// Keys: a prefix of any key characters, nothing but word characters
	// after the word.
	"xpassword=1 passwordx=2 a.password-x=3 x.token.y=4 my-api_key=5 apikey=6 access_key=7 privatekey=8 credentials=9 credential_x=10",
	// (?i) folds ſ to s and the Kelvin sign to k.
	"paſſword=x", "to\u212aen: y", "\u212a.token=z", "é password=1 ſ:2", "xſpassword=3",
	// Quotes and spaces around the separator.
	`"password" : "a\"b"`, `password"=x`, `password "=x`, `password""=x`, "password \t= \n x",
	// Values that end early or not at all.
	`password='x`, `password="x\`, "password=\"x\\\ny\"", "password= ,", `password=""`, "password=''", "password=",
	"password:\x00\xff", "\xe2\x84password=1", "\xc5password=1", "password=\"\xe2\\\xe2\"",
}

func TestSecretPairsScan(t *testing.T) {
	for _, s := range secretPairsSeeds {
		got, want := scanSecretPairs(nil, []byte(s)), refSecretPairs([]byte(s))
		if !slices.Equal(got, want) {
			t.Errorf("%q: %v, the regexp: %v", s, got, want)
		}
	}
}

// FuzzSecretPairs checks scanSecretPairs against the regexp it replaced,
// and isSecretName against (?i)^secretKey$.
func FuzzSecretPairs(f *testing.F) {
	for _, s := range secretPairsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := scanSecretPairs(nil, []byte(text)), refSecretPairs([]byte(text))
		if !slices.Equal(got, want) {
			t.Fatalf("%q: %v, the regexp: %v", text, got, want)
		}
		if g, w := isSecretName([]byte(text)), secretKeyRe.MatchString(text); g != w {
			t.Fatalf("isSecretName(%q) = %v, the regexp: %v", text, g, w)
		}
	})
}

// BenchmarkSecretPairs reports the cost of finding the pairs in a line:
// the scan (scan=keys) against the regexp it replaced (scan=regexp).
func BenchmarkSecretPairs(b *testing.B) {
	lines := map[string]string{
		"logfmt": `ts=2026-01-15T10:00:00.123Z level=info service=auth host=node-3 msg="user login" user=u12 path=/login status=200 password=hunter2 token="tk-0123456789abcdef"`,
		"json":   `{"ts":1768464000000,"level":"info","service":"auth","msg":"login","user":{"id":12,"api_key":"k-0123456789"},"http":{"path":"/login","status":200}}`,
	}
	for _, name := range []string{"logfmt", "json"} {
		line := []byte(lines[name])
		for _, scan := range []string{"keys", "regexp"} {
			b.Run(fmt.Sprintf("line=%s/scan=%s", name, scan), func(b *testing.B) {
				b.SetBytes(int64(len(line)))
				b.ReportAllocs()
				var spans [][2]int
				for b.Loop() {
					if scan == "keys" {
						spans = scanSecretPairs(spans[:0], line)
					} else {
						spans = refSecretPairs(line)
					}
				}
				if len(spans) == 0 || strings.Count(string(line), "=")+strings.Count(string(line), ":") == 0 {
					b.Fatal("found nothing")
				}
			})
		}
	}
}
