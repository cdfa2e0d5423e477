package timestamp

import "testing"

func TestLinePrefix(t *testing.T) {
	ref := int64(1768478400) * 1e9
	for _, tc := range []struct {
		in   string
		n    int
		ok   bool
		want string // the same timestamp as ParsePrefix reads it
	}{
		{"2015-10-18 18:01:47,978 INFO x", 23, true, "2015-10-18 18:01:47,978"},
		{"[Sun Dec 04 04:47:44 2005] [notice] x", 26, true, "Sun Dec 04 04:47:44 2005"},
		{"Jun 14 15:16:01 combo sshd", 15, true, "Jun 14 15:16:01"},
		{"1768464000 is not a time here", 0, false, ""},
		{"[1768464000] neither", 0, false, ""},
		{"[2026-01-15T08:00:00Z without its bracket", 0, false, ""},
		{"", 0, false, ""},
		{"plain text", 0, false, ""},
	} {
		ns, n, ok := LinePrefix([]byte(tc.in), ref)
		if ok != tc.ok || n != tc.n {
			t.Errorf("%q: n %d ok %v, want %d %v", tc.in, n, ok, tc.n, tc.ok)
			continue
		}
		if ok {
			want, _, _ := ParsePrefix([]byte(tc.want), ref)
			if ns != want {
				t.Errorf("%q: %d, want %d", tc.in, ns, want)
			}
		}
	}
}

func TestLinePrefixLayout(t *testing.T) {
	ref := int64(1768478400) * 1e9
	ns, n, ok := LinePrefixLayout([]byte("081109 203615 148 INFO x"), HDFS, ref)
	if !ok || n != 13 || ns != 1226262975e9 {
		t.Errorf("hdfs: %d %d %v", ns, n, ok)
	}
	if _, _, ok := LinePrefixLayout([]byte("081109 203615 148 INFO x"), Auto, ref); ok {
		t.Error("auto must not read an HDFS timestamp")
	}
	if _, n, ok := LinePrefixLayout([]byte("[17/06/09 20:10:40] x"), Spark, ref); !ok || n != 19 {
		t.Errorf("bracketed spark: %d %v", n, ok)
	}
}
