package query

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/logql"
)

// evalLabelReplace evaluates label_replace(v, dst, replacement, src,
// regex) as Prometheus does: for each series whose src label (the empty
// string when absent) matches the regex, which is anchored at both ends,
// dst is set to the replacement with $1, $name and ${name} expanded
// (regexp.Expand); an empty result removes dst. A series that does not
// match keeps its labels.
//
// Series that end with the same labels are merged into one when they
// have no step in common, and are an error when they do ("vector cannot
// contain metrics with the same labelset"), as Prometheus 3. The result
// is in label order, except that an instant vector sorted by value (by
// sort or sort_desc) keeps its order, as in Loki.
//
// A destination label name must be valid UTF-8 and not empty (Prometheus
// 3's rule; Loki checks nothing).
func evalLabelReplace(e *logql.LabelReplace, in *matrix) (*matrix, error) {
	if in.scalar {
		return nil, fmt.Errorf("%w: label_replace: expected a vector, got a scalar", ErrBadRequest)
	}
	if e.Dst == "" || !utf8.ValidString(e.Dst) {
		return nil, fmt.Errorf("%w: invalid destination label name in label_replace(): %q", ErrBadRequest, e.Dst)
	}
	if e.Re == nil {
		return nil, fmt.Errorf("label_replace: regex %q is not compiled", e.Regex)
	}
	out := in.like()
	index := make(map[string]int) // label set -> index in out.series
	owned := make(map[*series]bool)
	var key, buf []byte
	for _, s := range in.series {
		ls, changed := s.labels, false
		src, _ := s.labels.Get(e.Src)
		if m := e.Re.FindStringSubmatchIndex(src); m != nil {
			buf = e.Re.ExpandString(buf[:0], e.Replacement, src, m)
			ls, changed = setLabel(s.labels, e.Dst, string(buf))
		}
		key = appendLabelsKey(key[:0], ls)
		j, ok := index[string(key)]
		if !ok {
			o := s
			if changed {
				o = &series{labels: ls, vals: slices.Clone(s.vals), has: slices.Clone(s.has)}
				owned[o] = true
			}
			index[string(key)] = len(out.series)
			out.series = append(out.series, o)
			continue
		}
		o := out.series[j]
		if !owned[o] {
			// An input series: merge into a copy.
			o = &series{labels: o.labels, vals: slices.Clone(o.vals), has: slices.Clone(o.has)}
			owned[o] = true
			out.series[j] = o
		}
		for i, ok := range s.has {
			if !ok {
				continue
			}
			if o.has[i] {
				return nil, errSameLabelset
			}
			o.set(i, s.vals[i])
		}
	}
	orderLike(out, in)
	return out, nil
}
