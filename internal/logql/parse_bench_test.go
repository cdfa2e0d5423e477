package logql

import "testing"

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, query string }{
		{"query=selector", `{app="api", env=~"prod|dev"}`},
		{"query=log", `{app="api"} |= "error" != "timeout" | json | level="error" or status >= 500 | line_format "{{.msg}}"`},
		{"query=metric", `sum by (host) (rate({app="api"} | logfmt | unwrap duration(latency) | __error__="" [5m])) / on (host) group_left sum by (host) (count_over_time({app="api"}[5m]))`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.query)))
			for b.Loop() {
				if _, err := Parse(bc.query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
