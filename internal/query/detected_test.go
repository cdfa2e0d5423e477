package query

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/record"
)

func TestDetectType(t *testing.T) {
	// Loki's determineType order: int, float, boolean, duration, bytes.
	for v, want := range map[string]string{
		"42": "int", "-7": "int", "0.5": "float", "1e3": "float", "true": "boolean", "F": "boolean",
		"12ms": "duration", "1h30m": "duration", "10KB": "bytes", "3 MiB": "bytes", "1,024kb": "bytes",
		"5m": "duration", "10k": "bytes", "GET": "string", "": "string", "KB": "string", "12 parsecs": "string",
	} {
		if got := detectType(v); got != want {
			t.Errorf("detectType(%q) = %s, want %s", v, got, want)
		}
	}
	for _, tc := range [][3]string{{"int", "float", "float"}, {"int", "int", "int"}, {"int", "string", "string"}, {"duration", "bytes", "string"}} {
		if got := mergeType(tc[0], tc[1]); got != tc[2] {
			t.Errorf("mergeType(%s, %s) = %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestJSONFields(t *testing.T) {
	got, ok := jsonFields(` {"a":{"b c":1,"d":[1]},"app":"x","n":null,"1st":true} `, record.Labels{{Name: "app", Value: "y"}})
	want := []jsonField{{"_1st", "true", []string{"1st"}}, {"a_b_c", "1", []string{"a", "b c"}}, {"app_extracted", "x", []string{"app"}}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("jsonFields\n got %v\nwant %v", got, want)
	}
	if _, ok := jsonFields(`level=info`, nil); ok {
		t.Errorf("logfmt taken for JSON")
	}
}

func TestVolumeBuckets(t *testing.T) {
	s := int64(time.Second)
	b := newVolumeBuckets(1000*s, 1100*s, time.Minute)
	want := []int64{1020*s - int64(time.Millisecond), 1080*s - int64(time.Millisecond), 1100 * s}
	if !reflect.DeepEqual(b.times, want) {
		t.Errorf("times %v, want %v", b.times, want)
	}
	for tm, i := range map[int64]int{1000 * s: 0, 1019*s + 999: 0, 1020 * s: 1, 1080 * s: 2, 1100 * s: 2} {
		if got := b.index(tm); got != i {
			t.Errorf("index(%d) = %d, want %d", tm, got, i)
		}
	}
	if one := newVolumeBuckets(1000*s, 1100*s, 0); !reflect.DeepEqual(one.times, []int64{1100 * s}) || one.index(5) != 0 {
		t.Errorf("instant buckets %v", one.times)
	}
}

func TestLineLevel(t *testing.T) {
	for _, tc := range []struct {
		s    sampled
		want string
	}{
		{sampled{meta: record.Labels{{Name: "detected_level", Value: "warn"}}, extra: record.Labels{{Name: "level", Value: "ERROR"}}}, "warn"},
		{sampled{extra: record.Labels{{Name: "level", Value: "WARNING"}}}, "warn"},
		{sampled{stream: record.Labels{{Name: "level", Value: "Err"}}}, "error"},
		{sampled{stream: record.Labels{{Name: "app", Value: "x"}}}, "unknown"},
	} {
		if got := lineLevel(&tc.s); got != tc.want {
			t.Errorf("lineLevel(%+v) = %s, want %s", tc.s, got, tc.want)
		}
	}
}
