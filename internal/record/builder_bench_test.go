package record

import (
	"fmt"
	"testing"
)

// BenchmarkEnd measures resolving a record's stream and time: records with
// two stream labels drawn from 300 streams, and an RFC 3339 time field.
func BenchmarkEnd(b *testing.B) {
	for _, withTime := range []bool{false, true} {
		b.Run(fmt.Sprintf("time=%v", withTime), func(b *testing.B) {
			bl := NewBuilder(DefaultConfig())
			batch := &Batch{}
			type rec struct{ svc, host, ts Span }
			var recs []rec
			for i := range 1000 {
				var r rec
				add := func(s string) Span {
					sp := Span{Off: uint32(len(batch.Data)), Len: uint32(len(s))}
					batch.Data = append(batch.Data, s...)
					batch.Data = append(batch.Data, `", "`...)
					return sp
				}
				r.svc = add(fmt.Sprintf("service-%d", i*7%10))
				r.host = add(fmt.Sprintf("node-%d", i*13%30))
				r.ts = add("2026-01-15T08:00:00.123456Z")
				recs = append(recs, r)
			}
			svc, _ := bl.Name([]byte("service"))
			host, _ := bl.Name([]byte("host"))
			ts, _ := bl.Name([]byte("time"))
			b.ReportAllocs()
			for b.Loop() {
				batch.Records, batch.Fields = batch.Records[:0], batch.Fields[:0]
				bl.Start(batch)
				for _, r := range recs {
					bl.Begin(Span{})
					bl.Add(Field{Name: svc, Kind: String, Raw: r.svc})
					bl.Add(Field{Name: host, Kind: String, Raw: r.host})
					if withTime {
						bl.Add(Field{Name: ts, Kind: String, Raw: r.ts})
					}
					bl.End()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}
