package stage

import (
	"slices"
	"text/template/parse"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// Observed is the set of label names whose values a query can observe
// after a pipeline (Loki calls them parser hints): the labels its result
// is grouped by, and those the pipeline's own label filters, drop and
// keep read. A parser without parameters (json, logfmt, unpack) sets
// only these; the others could change nothing the query answers, and
// setting them is where such a query spent its time and memory (a
// series per distinct trace id, say, summed away at the end).
//
// A name is kept or skipped by every parser of the pipeline alike, so a
// parser's first-value-wins rule sees the same values for the names
// kept as without hints. nil is every name.
type Observed struct {
	names []string
}

// observes reports whether a label named name is set.
func (o *Observed) observes(name string) bool {
	return o == nil || slices.Contains(o.names, name)
}

// observesBytes is observes for a name being built in a buffer.
func (o *Observed) observesBytes(name []byte) bool {
	if o == nil {
		return true
	}
	for _, n := range o.names {
		if n == string(name) {
			return true
		}
	}
	return false
}

// Sees reports whether a row's label named name, set before the
// pipeline (structured metadata, say), could change what the query
// answers: o observes name, or name_extracted, which a parser names its
// own label of name when the row has that label already. Always for nil
// (every label).
func (o *Observed) Sees(name string) bool {
	if o == nil {
		return true
	}
	for _, n := range o.names {
		if n == name || len(n) == len(name)+len(ExtractedSuffix) && n[:len(name)] == name && n[len(name):] == ExtractedSuffix {
			return true
		}
	}
	return false
}

// Beyond reports whether o observes a label that is neither an error
// label nor one of ls (a stream's labels): one that rows may have from
// their structured metadata. Always for nil (every label).
func (o *Observed) Beyond(ls record.Labels) bool {
	if o == nil {
		return true
	}
	for _, n := range o.names {
		if n == ErrorLabel || n == ErrorDetailsLabel {
			continue
		}
		if _, ok := ls.Get(n); !ok {
			return true
		}
	}
	return false
}

// allSet reports whether every label o observes but the error labels
// is set in lb: then no parser can set another label the query sees
// (the first value of a name wins), and what is left of a line need
// only be read for its errors. Never for nil (every label).
func (o *Observed) allSet(lb *Labels) bool {
	if o == nil {
		return false
	}
	for _, n := range o.names {
		if n == ErrorLabel || n == ErrorDetailsLabel {
			continue
		}
		if _, ok := lb.lookup(n); !ok {
			return false
		}
	}
	return true
}

// underPrefix reports whether a name observed starts with prefix and
// "_": a field of the object a json parser would name prefix.
func (o *Observed) underPrefix(prefix []byte) bool {
	if o == nil {
		return true
	}
	for _, n := range o.names {
		if len(n) > len(prefix) && n[len(prefix)] == '_' && n[:len(prefix)] == string(prefix) {
			return true
		}
	}
	return false
}

// ObservedBy returns the labels a query can observe after stages when
// what it does with a row's labels at the end reads only result (the
// grouping of an outer sum, say): result, the error labels, and the
// labels the stages' own filters, keep, label_format and line_format
// name. (A label drop names is not observed: a parser that leaves it
// unset gives what dropping it gives, and a later read of it is one of
// the others.) It returns nil (every label) when a stage can read labels
// it does not name: a template that may read the whole data
// (templateLabels).
func ObservedBy(stages []logql.Stage, result []string) *Observed {
	o := &Observed{names: append([]string{ErrorLabel, ErrorDetailsLabel}, result...)}
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFormat:
			refs, ok := templateLabels(s.Template)
			if !ok {
				return nil
			}
			o.names = append(o.names, refs...)
		case *logql.LabelFormat:
			for _, it := range s.Items {
				if it.Src != "" {
					o.names = append(o.names, it.Src)
					continue
				}
				refs, ok := templateLabels(it.Template)
				if !ok {
					return nil
				}
				o.names = append(o.names, refs...)
			}
		case *logql.LabelFilterStage:
			var ok bool
			if o.names, ok = appendFilterNames(o.names, s.Filter); !ok {
				return nil
			}
		case *logql.Keep:
			o.names = appendItemNames(o.names, s.Items)
		}
	}
	slices.Sort(o.names)
	o.names = slices.Compact(o.names)
	return o
}

// templateLabels returns the labels a line_format template reads, when
// it reads them only by name (`{{.msg}}`, in actions, conditions and
// function arguments); false when it may read others: the whole data
// (`.` or `$` passed on, `range`, `with`, a chain), or a template it
// includes.
func templateLabels(src string) ([]string, bool) {
	names, _, ok := templateRefs(src)
	return names, ok
}

// FormatsLabelsOnly reports whether a label_format sets labels from
// other labels alone: each template reads labels by name (templateLabels)
// and neither the row's line nor its time.
func FormatsLabelsOnly(f *logql.LabelFormat) bool {
	for _, it := range f.Items {
		if it.Src != "" {
			continue
		}
		if _, row, ok := templateRefs(it.Template); !ok || row {
			return false
		}
	}
	return true
}

// templateRefs returns the labels a template reads (templateLabels) and
// whether it reads its row's line or time (__line__, __timestamp__), or
// the clock (now).
func templateRefs(src string) (names []string, row, ok bool) {
	t, err := parseTemplate("line", src, &templateCtx{})
	if err != nil || t.Tree == nil {
		return nil, false, false
	}
	var walk func(n parse.Node) bool
	walk = func(n parse.Node) bool {
		switch n := n.(type) {
		case nil:
			return true
		case *parse.ListNode:
			if n == nil {
				return true
			}
			for _, c := range n.Nodes {
				if !walk(c) {
					return false
				}
			}
			return true
		case *parse.IdentifierNode:
			row = row || n.Ident == "__line__" || n.Ident == "__timestamp__" || n.Ident == "now"
			return true
		case *parse.TextNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
			return true
		case *parse.FieldNode:
			names = append(names, n.Ident[0])
			return true
		case *parse.ActionNode:
			return walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return true
			}
			if len(n.Decl) > 0 {
				return false // a variable may hold the data
			}
			for _, c := range n.Cmds {
				if !walk(c) {
					return false
				}
			}
			return true
		case *parse.CommandNode:
			for _, a := range n.Args {
				if !walk(a) {
					return false
				}
			}
			return true
		case *parse.IfNode:
			return walk(n.Pipe) && walk(n.List) && walk(n.ElseList)
		}
		return false // ., $, range, with, template, chains, ...
	}
	if !walk(t.Tree.Root) {
		return nil, false, false
	}
	return names, row, true
}

// AddFilters adds the labels filters read (those after unwrap) to o.
func (o *Observed) AddFilters(filters []logql.LabelFilter) *Observed {
	if o == nil {
		return nil
	}
	names := slices.Clone(o.names)
	for _, f := range filters {
		var ok bool
		if names, ok = appendFilterNames(names, f); !ok {
			return nil
		}
	}
	slices.Sort(names)
	return &Observed{names: slices.Compact(names)}
}

// Except returns o without names (the error labels stay): labels a
// parser of the query cannot set, such as those every stream it reads
// has (a parser sets name_extracted for a stream's label name).
func (o *Observed) Except(names []string) *Observed {
	if o == nil || len(names) == 0 {
		return o
	}
	kept := make([]string, 0, len(o.names))
	for _, n := range o.names {
		if n == ErrorLabel || n == ErrorDetailsLabel || !slices.Contains(names, n) {
			kept = append(kept, n)
		}
	}
	return &Observed{names: kept}
}

// Names returns the names observed, sorted; nil for every name.
func (o *Observed) Names() []string {
	if o == nil {
		return nil
	}
	return slices.Clone(o.names)
}

func appendItemNames(dst []string, items []logql.LabelItem) []string {
	for _, it := range items {
		if it.Matcher != nil {
			dst = append(dst, it.Matcher.Name)
		} else {
			dst = append(dst, it.Name)
		}
	}
	return dst
}

// appendFilterNames appends the labels a filter reads; false for a
// filter it does not know (then every label counts as observed).
func appendFilterNames(dst []string, f logql.LabelFilter) ([]string, bool) {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		dst, ok := appendFilterNames(dst, f.Left)
		if !ok {
			return dst, false
		}
		return appendFilterNames(dst, f.Right)
	case *logql.LabelFilterString:
		return append(dst, f.Matcher.Name), true
	case *logql.LabelFilterNumber:
		return append(dst, f.Name), true
	case *logql.LabelFilterDuration:
		return append(dst, f.Name), true
	case *logql.LabelFilterBytes:
		return append(dst, f.Name), true
	case *logql.LabelFilterIP:
		return append(dst, f.Name), true
	}
	return dst, false
}
