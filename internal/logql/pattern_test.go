package logql

import (
	"reflect"
	"testing"
)

func TestCompilePattern(t *testing.T) {
	lit := func(s string) PatternPart { return PatternPart{Literal: s} }
	capture := func(name string) PatternPart { return PatternPart{Name: name, Capture: true} }
	for _, tc := range []struct {
		src   string
		named bool // the pattern parser stage; else a line filter
		parts []PatternPart
		err   string
	}{
		{src: `<ip> - <_>`, named: true, parts: []PatternPart{capture("ip"), lit(" - "), capture("")}},
		{src: `GET <path> HTTP`, named: true, parts: []PatternPart{lit("GET "), capture("path"), lit(" HTTP")}},
		{src: `<a> <1> < b> <> <c`, named: true, parts: []PatternPart{capture("a"), lit(" <1> < b> <> <c")}},
		{src: `<_a>x<b_1>`, named: true, parts: []PatternPart{capture("_a"), lit("x"), capture("b_1")}},
		{src: `ü<x>ü`, named: true, parts: []PatternPart{lit("ü"), capture("x"), lit("ü")}},
		{src: `<_> caller=<c> <_>`, parts: []PatternPart{capture(""), lit(" caller="), capture("c"), lit(" "), capture("")}},
		{src: `plain`, parts: []PatternPart{lit("plain")}},
		{src: ``},
		{src: `<a> <a>`, parts: []PatternPart{capture("a"), lit(" "), capture("a")}},
		{src: ``, named: true, err: "at least one capture is required"},
		{src: `<_> x <_>`, named: true, err: "at least one capture is required"},
		{src: `<a><b>`, named: true, err: "found consecutive capture '<b>'"},
		{src: `x <_><_>`, err: "found consecutive capture '<_>'"},
		{src: `<a> <a>`, named: true, err: "duplicate capture name (a) found"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			p, err := compilePattern(tc.src, tc.named)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Source != tc.src || !reflect.DeepEqual(p.Parts, tc.parts) {
				t.Errorf("got %q %+v, want %+v", p.Source, p.Parts, tc.parts)
			}
		})
	}
}
