package pattern

import (
	"fmt"
	"testing"
)

func BenchmarkMinerAdd(b *testing.B) {
	for _, format := range []string{"text", "logfmt", "json"} {
		lines := make([][]byte, 1000)
		for i := range lines {
			switch format {
			case "text":
				lines[i] = fmt.Appendf(nil, "user u%d logged in from 10.0.%d.%d after %dms", i%50, i%7, i%250, i%900)
			case "logfmt":
				lines[i] = fmt.Appendf(nil, `level=info msg="user logged in" user=u%d ip=10.0.%d.%d took=%dms`, i%50, i%7, i%250, i%900)
			default:
				lines[i] = fmt.Appendf(nil, `{"level":"info","msg":"user logged in","user":"u%d","ip":"10.0.%d.%d","took_ms":%d}`, i%50, i%7, i%250, i%900)
			}
		}
		b.Run("format="+format, func(b *testing.B) {
			m := NewMiner(Options{Step: 10})
			b.ReportAllocs()
			b.SetBytes(int64(len(lines[0])))
			i := 0
			for b.Loop() {
				m.Add(int64(i), lines[i%len(lines)])
				i++
			}
		})
	}
}
