package server

import (
	"math"
	"runtime"
	"slices"
	"strconv"

	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/record"
)

// categorizeLabels is Loki's encoding flag for streams whose labels are
// the stream labels alone, each entry with its structured metadata and
// parsed labels as a third element.
const categorizeLabels = "categorize-labels"

// appendQueryResult appends a query's result as Loki's JSON:
// {"status":"success","data":{"resultType":..,"result":..,"stats":..}};
// categorize, as asked with categorize-labels (query.Params.Categorize).
func appendQueryResult(b []byte, res *query.Result, categorize bool) []byte {
	b = append(b, `{"status":"success","data":{"resultType":"`...)
	b = append(b, res.Type...)
	b = append(b, '"')
	if categorize {
		b = append(b, `,"encodingFlags":["`+categorizeLabels+`"]`...)
	}
	b = append(b, `,"result":`...)
	switch res.Type {
	case "streams":
		b = append(b, '[')
		for i, s := range res.Streams {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"stream":`...)
			b = s.Labels.AppendJSON(b)
			b = append(b, `,"values":[`...)
			for j, e := range s.Entries {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `["`...)
				b = strconv.AppendInt(b, e.Time, 10)
				b = append(b, `",`...)
				b = appendJSONString(b, e.Line)
				if categorize {
					b = appendCategories(b, e)
				}
				b = append(b, ']')
			}
			b = append(b, "]}"...)
		}
		b = append(b, ']')
	case "matrix":
		b = append(b, '[')
		for i, s := range res.Matrix {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"metric":`...)
			b = s.Labels.AppendJSON(b)
			b = append(b, `,"values":[`...)
			for j, p := range s.Points {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendPoint(b, p)
			}
			b = append(b, "]}"...)
		}
		b = append(b, ']')
	case "vector":
		b = append(b, '[')
		for i, s := range res.Vector {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"metric":`...)
			b = s.Labels.AppendJSON(b)
			b = append(b, `,"value":`...)
			b = appendPoint(b, s.Point)
			b = append(b, '}')
		}
		b = append(b, ']')
	case "scalar":
		b = appendPoint(b, res.Scalar)
	}
	b = append(b, `,"stats":`...)
	b = appendStats(b, res.Stats)
	b = append(b, '}')
	if len(res.Warnings) > 0 {
		// Loki's top-level "warnings": what the answer may lack.
		b = append(b, `,"warnings":[`...)
		for i, w := range res.Warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, w)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendPoint appends [unix seconds, "value"] as Prometheus and Loki do.
func appendPoint(b []byte, p query.Point) []byte {
	b = append(b, '[')
	sec, ns := p.Time/1e9, p.Time%1e9
	if ns < 0 {
		sec, ns = sec-1, ns+1e9
	}
	b = strconv.AppendInt(b, sec, 10)
	if ns != 0 {
		frac := strconv.AppendInt(nil, ns+1e9, 10)[1:] // nine digits
		for len(frac) > 0 && frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
		b = append(b, '.')
		b = append(b, frac...)
	}
	b = append(b, `,"`...)
	b = appendValue(b, p.Value)
	return append(b, `"]`...)
}

// appendValue formats a sample value as Prometheus does.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// appendStats appends the stats block in the shape of Loki's summary.
func appendStats(b []byte, st query.Stats) []byte {
	secs := st.ExecDuration.Seconds()
	perSec := func(n int64) int64 {
		if secs <= 0 {
			return 0
		}
		return int64(float64(n) / secs)
	}
	b = append(b, `{"summary":{"bytesProcessedPerSecond":`...)
	b = strconv.AppendInt(b, perSec(st.Bytes), 10)
	b = append(b, `,"linesProcessedPerSecond":`...)
	b = strconv.AppendInt(b, perSec(st.Rows), 10)
	b = append(b, `,"totalBytesProcessed":`...)
	b = strconv.AppendInt(b, st.Bytes, 10)
	b = append(b, `,"totalLinesProcessed":`...)
	b = strconv.AppendInt(b, st.Rows, 10)
	b = append(b, `,"execTime":`...)
	b = strconv.AppendFloat(b, secs, 'f', -1, 64)
	b = append(b, `,"queueTime":0,"subqueries":0,"totalEntriesReturned":`...)
	b = strconv.AppendInt(b, st.LinesOut, 10)
	b = append(b, `,"splits":0,"shards":0,"totalPostFilterLines":`...)
	b = strconv.AppendInt(b, st.LinesOut, 10)
	b = append(b, `,"totalStreamsRead":`...)
	b = strconv.AppendInt(b, st.Streams, 10)
	return append(b, "}}"...)
}

// appendStringsData appends {"status":"success","data":[...]} with the
// set's strings sorted.
func appendStringsData(b []byte, set map[string]bool) []byte {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, `{"status":"success","data":[`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
	}
	return append(b, "]}"...)
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = record.AppendJSONEscaped(b, s)
	return append(b, '"')
}

func goVersion() string { return runtime.Version() }

// appendCategories appends an entry's third element in Loki's
// categorize-labels encoding: {"structuredMetadata":{..},"parsed":{..}},
// each left out when empty.
func appendCategories(b []byte, e query.Entry) []byte {
	b = append(b, ",{"...)
	if len(e.Meta) > 0 {
		b = append(b, `"structuredMetadata":`...)
		b = e.Meta.AppendJSON(b)
	}
	if len(e.Parsed) > 0 {
		if len(e.Meta) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"parsed":`...)
		b = e.Parsed.AppendJSON(b)
	}
	return append(b, '}')
}
