package query

import (
	"regexp"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
)

// newLabelReplace builds the expression as the parser does: the regex
// anchored at both ends.
func newLabelReplace(dst, replacement, src, regex string) *logql.LabelReplace {
	return &logql.LabelReplace{
		Dst: dst, Replacement: replacement, Src: src, Regex: regex,
		Re: regexp.MustCompile("^(?:" + regex + ")$"),
	}
}

func TestLabelReplace(t *testing.T) {
	tests := []struct {
		name string
		e    *logql.LabelReplace
		in   string
		want string
	}{
		{name: "group", e: newLabelReplace("dst", "$1", "src", "(.*)-.*"), in: `
			{src="foo-bar"} 1 _
			{src="nodash"}  2 3`, want: `
			{dst="foo", src="foo-bar"} 1 _
			{src="nodash"}             2 3`},
		{name: "named group", e: newLabelReplace("dst", "x-${name}-y", "src", "(?P<name>[a-z]+)[0-9]+"), in: `{src="abc123"} 1`,
			want: `{dst="x-abc-y", src="abc123"} 1`},
		{name: "$name", e: newLabelReplace("dst", "$name", "src", "(?P<name>[a-z]+)[0-9]+"), in: `{src="abc123"} 1`,
			want: `{dst="abc", src="abc123"} 1`},
		{name: "anchored", e: newLabelReplace("dst", "$1", "src", "(o+)"), in: `{src="foo"} 1`, want: `{src="foo"} 1`},
		{name: "literal replacement", e: newLabelReplace("dst", "value", "src", ".*"), in: `{src="x"} 1`,
			want: `{dst="value", src="x"} 1`},
		{name: "absent source is empty", e: newLabelReplace("dst", "x", "nothere", ""), in: `{a="1"} 1`,
			want: `{a="1", dst="x"} 1`},
		{name: "absent source no match", e: newLabelReplace("dst", "x", "nothere", ".+"), in: `{a="1"} 1`,
			want: `{a="1"} 1`},
		{name: "overwrite", e: newLabelReplace("a", "$1$1", "a", "(.*)"), in: `{a="1", b="2"} 1`,
			want: `{a="11", b="2"} 1`},
		{name: "copy to first", e: newLabelReplace("a", "$1", "z", "(.*)"), in: `{m="1", z="last"} 1`,
			want: `{a="last", m="1", z="last"} 1`},
		{name: "copy to last", e: newLabelReplace("zz", "$1", "a", "(.*)"), in: `{a="first", m="1"} 1`,
			want: `{a="first", m="1", zz="first"} 1`},
		{name: "empty result removes", e: newLabelReplace("src", "", "src", ".*"), in: `{a="1", src="x"} 1`,
			want: `{a="1"} 1`},
		{name: "empty group removes", e: newLabelReplace("dst", "$1", "src", "x(.*)"), in: `{dst="old", src="x"} 1`,
			want: `{src="x"} 1`},
		{name: "UTF-8 name", e: newLabelReplace("föö-bar", "$1", "a", "(.*)"), in: `{a="1"} 1`,
			want: `{a="1", föö-bar="1"} 1`},
		{name: "merge at different steps", e: newLabelReplace("pod", "", "pod", ".*"), in: `
			{app="a", pod="1"} 1 _ _
			{app="a", pod="2"} _ 2 _
			{app="b", pod="3"} 3 3 3`, want: `
			{app="a"} 1 2 _
			{app="b"} 3 3 3`},
		{name: "merge into an unchanged series", e: newLabelReplace("pod", "", "pod", "2"), in: `
			{app="a"}          1 _
			{app="a", pod="2"} _ 2`, want: `{app="a"} 1 2`},
		{name: "label order", e: newLabelReplace("a", "$1", "n", "(.*)"), in: `
			{n="2", x="1"} 1 1
			{n="1", x="2"} 2 2`, want: `
			{a="1", n="1", x="2"} 2 2
			{a="2", n="2", x="1"} 1 1`},
		{name: "order of a sorted instant vector", e: newLabelReplace("a", "$1", "n", "(.*)"), in: `
			{n="2", x="1"} 1
			{n="1", x="2"} 2
			{n="3", x="0"} 3`, want: `
			{a="2", n="2", x="1"} 1
			{a="1", n="1", x="2"} 2
			{a="3", n="3", x="0"} 3`},
		{name: "empty", e: newLabelReplace("a", "b", "c", ".*"), in: "steps 2", want: "steps 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testMatrix(t, tt.in)
			before := formatMatrix(in)
			got, err := evalLabelReplace(tt.e, in)
			if err != nil {
				t.Fatal(err)
			}
			checkOperatorResult(t, []*matrix{in}, []string{before}, got, tt.want)
		})
	}
}

func TestLabelReplaceReusesUnchanged(t *testing.T) {
	in := testMatrix(t, "{a=\"1\"} 1\n{a=\"2\"} 2")
	got, err := evalLabelReplace(newLabelReplace("b", "$1", "a", "(2)"), in)
	if err != nil {
		t.Fatal(err)
	}
	if got.series[0] != in.series[0] {
		t.Errorf("unchanged series copied")
	}
	if got.series[1] == in.series[1] {
		t.Errorf("changed series reused")
	}
}

func TestLabelReplaceErrors(t *testing.T) {
	tests := []struct {
		name string
		e    *logql.LabelReplace
		in   string
		want string
	}{
		{name: "same labels at a step", e: newLabelReplace("pod", "", "pod", ".*"), in: `
			{app="a", pod="1"} 1 _
			{app="a", pod="2"} _ 2
			{app="a", pod="3"} _ 3`, want: "vector cannot contain metrics with the same labelset"},
		{name: "empty destination", e: newLabelReplace("", "x", "a", ".*"), in: `{a="1"} 1`,
			want: `invalid destination label name in label_replace(): ""`},
		{name: "invalid UTF-8 destination", e: newLabelReplace("\xff", "x", "a", ".*"), in: `{a="1"} 1`,
			want: "invalid destination label name in label_replace()"},
		{name: "scalar", e: newLabelReplace("a", "x", "a", ".*"), in: "scalar 1", want: "expected a vector, got a scalar"},
		{name: "regex not compiled", e: &logql.LabelReplace{Dst: "a", Regex: "x"}, in: `{a="1"} 1`, want: "not compiled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evalLabelReplace(tt.e, testMatrix(t, tt.in))
			checkErrContains(t, err, tt.want)
		})
	}
}
