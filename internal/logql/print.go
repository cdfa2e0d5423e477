package logql

import (
	"strconv"
	"strings"
)

// The printer writes canonical LogQL: Parse of a node's String gives an
// equal tree, whose String is the same text. Parentheses appear only
// where the tree needs them.

var filterOpText = [...]string{"|=", "!=", "|~", "!~", "|>", "!>"}

func (op FilterOp) String() string {
	if int(op) < len(filterOpText) {
		return filterOpText[op]
	}
	return "FilterOp(" + strconv.Itoa(int(op)) + ")"
}

var cmpOpText = [...]string{"==", "!=", ">", ">=", "<", "<="}

func (op CmpOp) String() string {
	if int(op) < len(cmpOpText) {
		return cmpOpText[op]
	}
	return "CmpOp(" + strconv.Itoa(int(op)) + ")"
}

func (e *LogExpr) String() string {
	var b strings.Builder
	writeLog(&b, e)
	return b.String()
}

func writeLog(b *strings.Builder, e *LogExpr) {
	if e == nil {
		return
	}
	b.WriteString(e.Selector.String())
	for _, s := range e.Pipeline {
		b.WriteByte(' ')
		b.WriteString(s.String())
	}
}

func (f *LineFilter) String() string {
	var b strings.Builder
	b.WriteString(f.Op.String())
	for i, v := range f.Values {
		if i > 0 {
			b.WriteString(" or")
		}
		b.WriteByte(' ')
		b.WriteString(v.String())
	}
	return b.String()
}

func (v FilterValue) String() string {
	if v.IP {
		return "ip(" + quote(v.Value) + ")"
	}
	return quote(v.Value)
}

func (e LabelExtraction) String() string {
	if e.Expr == e.Name && isLabelName(e.Name) {
		return e.Name
	}
	return e.Name + "=" + quote(e.Expr)
}

// writeList writes " a, b, c": the operands of a stage.
func writeList[T interface{ String() string }](b *strings.Builder, items []T) {
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(it.String())
	}
}

func (s *JSONParser) String() string {
	var b strings.Builder
	b.WriteString("| json")
	writeList(&b, s.Params)
	return b.String()
}

func (s *LogfmtParser) String() string {
	var b strings.Builder
	b.WriteString("| logfmt")
	if s.Strict {
		b.WriteString(" --strict")
	}
	if s.KeepEmpty {
		b.WriteString(" --keep-empty")
	}
	writeList(&b, s.Params)
	return b.String()
}

func (s *RegexpParser) String() string {
	src := ""
	if s.Re != nil {
		src = s.Re.String()
	}
	return "| regexp " + quote(src)
}

func (s *PatternParser) String() string { return "| pattern " + quote(s.Pattern.String()) }

func (p *Pattern) String() string {
	if p == nil {
		return ""
	}
	return p.Source
}

func (*Unpack) String() string     { return "| unpack" }
func (*Decolorize) String() string { return "| decolorize" }

func (s *LabelFilterStage) String() string { return "| " + labelFilterString(s.Filter) }

func (s *LineFormat) String() string { return "| line_format " + quote(s.Template) }

func (it LabelFormatItem) String() string {
	// A rename has a source; anything else is a template, possibly
	// empty (dst="").
	if it.Src != "" {
		return it.Dst + "=" + it.Src
	}
	return it.Dst + "=" + quote(it.Template)
}

func (s *LabelFormat) String() string {
	var b strings.Builder
	b.WriteString("| label_format")
	for i, it := range s.Items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(it.String())
	}
	return b.String()
}

func (it LabelItem) String() string {
	if it.Matcher != nil {
		return it.Matcher.String()
	}
	return it.Name
}

func (s *Drop) String() string {
	var b strings.Builder
	b.WriteString("| drop")
	writeList(&b, s.Items)
	return b.String()
}

func (s *Keep) String() string {
	var b strings.Builder
	b.WriteString("| keep")
	writeList(&b, s.Items)
	return b.String()
}

// labelFilterString prints f, or nothing for a nil filter.
func labelFilterString(f LabelFilter) string {
	if f == nil {
		return ""
	}
	return f.String()
}

// labelFilterPrec is the precedence of a label filter: "and" binds
// tighter than "or", predicates tightest.
func labelFilterPrec(f LabelFilter) int {
	if bf, ok := f.(*LabelFilterBinary); ok {
		if bf.And {
			return 2
		}
		return 1
	}
	return 3
}

func (f *LabelFilterBinary) String() string {
	var b strings.Builder
	prec := labelFilterPrec(f)
	// Both operators are left associative: a right operand of the same
	// precedence keeps its parentheses.
	writeParen(&b, labelFilterString(f.Left), labelFilterPrec(f.Left) < prec)
	if f.And {
		b.WriteString(" and ")
	} else {
		b.WriteString(" or ")
	}
	writeParen(&b, labelFilterString(f.Right), labelFilterPrec(f.Right) <= prec)
	return b.String()
}

func writeParen(b *strings.Builder, s string, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	b.WriteString(s)
	if paren {
		b.WriteByte(')')
	}
}

func (f *LabelFilterString) String() string { return f.Matcher.String() }

func (f *LabelFilterNumber) String() string {
	return f.Name + " " + f.Op.String() + " " + formatFloat(f.Value)
}

func (f *LabelFilterDuration) String() string {
	return f.Name + " " + f.Op.String() + " " + formatDuration(f.Value)
}

func (f *LabelFilterBytes) String() string {
	return f.Name + " " + f.Op.String() + " " + formatBytes(f.Value)
}

func (f *LabelFilterIP) String() string {
	op := "="
	if f.Negate {
		op = "!="
	}
	return f.Name + op + "ip(" + quote(f.Value) + ")"
}

func (u *Unwrap) String() string {
	var b strings.Builder
	b.WriteString("| unwrap ")
	if u.Conv != "" {
		b.WriteString(u.Conv + "(" + u.Label + ")")
	} else {
		b.WriteString(u.Label)
	}
	for _, f := range u.Filters {
		b.WriteString(" | ")
		b.WriteString(labelFilterString(f))
	}
	return b.String()
}

func (r *LogRange) String() string {
	var b strings.Builder
	writeLog(&b, r.Log)
	if r.Unwrap != nil {
		b.WriteByte(' ')
		b.WriteString(r.Unwrap.String())
	}
	b.WriteString(" [" + formatDuration(r.Interval) + "]")
	if r.Offset != 0 {
		b.WriteString(" offset " + formatDuration(r.Offset))
	}
	return b.String()
}

func (g *Grouping) String() string {
	kw := "by ("
	if g.Without {
		kw = "without ("
	}
	return kw + strings.Join(g.Labels, ", ") + ")"
}

func (e *RangeAggregation) String() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteByte('(')
	if e.Op == "quantile_over_time" {
		b.WriteString(formatFloat(e.Param))
		b.WriteString(", ")
	}
	if e.Range != nil {
		b.WriteString(e.Range.String())
	}
	b.WriteByte(')')
	if e.Grouping != nil {
		b.WriteByte(' ')
		b.WriteString(e.Grouping.String())
	}
	return b.String()
}

func (e *VectorAggregation) String() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Grouping != nil {
		b.WriteByte(' ')
		b.WriteString(e.Grouping.String())
		b.WriteByte(' ')
	}
	b.WriteByte('(')
	if e.Op == "topk" || e.Op == "bottomk" || e.Op == "approx_topk" {
		b.WriteString(strconv.Itoa(e.Param))
		b.WriteString(", ")
	}
	b.WriteString(sampleString(e.Expr))
	b.WriteByte(')')
	return b.String()
}

// sampleString prints e, or nothing for a nil expression.
func sampleString(e SampleExpr) string {
	if e == nil {
		return ""
	}
	return e.String()
}

func (m *VectorMatching) String() string {
	var b strings.Builder
	if m.On {
		b.WriteString("on (")
	} else {
		b.WriteString("ignoring (")
	}
	b.WriteString(strings.Join(m.Labels, ", "))
	b.WriteByte(')')
	switch m.Card {
	case ManyToOne:
		b.WriteString(" group_left")
	case OneToMany:
		b.WriteString(" group_right")
	}
	if m.Card != OneToOne && len(m.Include) > 0 {
		b.WriteString(" (" + strings.Join(m.Include, ", ") + ")")
	}
	return b.String()
}

// exprPrec is the precedence of e as an operand: its operator's for a
// binary operation, higher than any operator for the rest.
func exprPrec(e SampleExpr) int {
	if be, ok := e.(*BinaryExpr); ok {
		return opPrec(be.Op)
	}
	return 7
}

func (e *BinaryExpr) String() string {
	var b strings.Builder
	prec := opPrec(e.Op)
	rightAssoc := e.Op == "^"
	lp, rp := exprPrec(e.LHS), exprPrec(e.RHS)
	writeParen(&b, sampleString(e.LHS), lp < prec || lp == prec && rightAssoc)
	b.WriteString(" " + e.Op)
	if e.ReturnBool {
		b.WriteString(" bool")
	}
	if e.Matching != nil {
		b.WriteByte(' ')
		b.WriteString(e.Matching.String())
	}
	b.WriteByte(' ')
	writeParen(&b, sampleString(e.RHS), rp < prec || rp == prec && !rightAssoc)
	return b.String()
}

func (e *LiteralExpr) String() string { return formatFloat(e.Value) }

func (e *VectorExpr) String() string { return "vector(" + formatFloat(e.Value) + ")" }

func (e *LabelReplace) String() string {
	return "label_replace(" + sampleString(e.Expr) + ", " + quote(e.Dst) + ", " +
		quote(e.Replacement) + ", " + quote(e.Src) + ", " + quote(e.Regex) + ")"
}
