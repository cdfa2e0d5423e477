package logql

import (
	"regexp"
	"slices"
	"strconv"
)

// rangeOps are the range aggregation functions.
var rangeOps = map[string]bool{
	"count_over_time": true, "rate": true, "bytes_over_time": true, "bytes_rate": true,
	"absent_over_time": true, "sum_over_time": true, "avg_over_time": true,
	"min_over_time": true, "max_over_time": true, "first_over_time": true,
	"last_over_time": true, "stddev_over_time": true, "stdvar_over_time": true,
	"quantile_over_time": true, "rate_counter": true,
}

// vectorOps are the vector aggregation operators.
var vectorOps = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true,
	"sort": true, "sort_desc": true, "approx_topk": true,
}

// Which range aggregations take an unwrap, and which a grouping, as
// Loki validates them.
var (
	rangeUnwrapAllowed = map[string]bool{
		"avg_over_time": true, "sum_over_time": true, "max_over_time": true, "min_over_time": true,
		"stddev_over_time": true, "stdvar_over_time": true, "quantile_over_time": true,
		"rate": true, "rate_counter": true, "absent_over_time": true,
		"first_over_time": true, "last_over_time": true,
	}
	rangeUnwrapOptional = map[string]bool{
		"bytes_over_time": true, "bytes_rate": true, "count_over_time": true,
		"rate": true, "absent_over_time": true,
	}
	rangeGroupingAllowed = map[string]bool{
		"avg_over_time": true, "stddev_over_time": true, "stdvar_over_time": true,
		"quantile_over_time": true, "max_over_time": true, "min_over_time": true,
		"first_over_time": true, "last_over_time": true,
	}
)

// binOp returns the operator and precedence of a binary operator token:
// Prometheus' order, ^ binding tightest.
func binOp(t token) (string, int, bool) {
	switch t.kind {
	case tIdent:
		switch t.text {
		case "or":
			return "or", 1, true
		case "and", "unless":
			return t.text, 2, true
		}
	case tCmpEq, tNeq, tGt, tGte, tLt, tLte:
		return t.text, 3, true
	case tAdd, tSub:
		return t.text, 4, true
	case tMul, tDiv, tMod:
		return t.text, 5, true
	case tPow:
		return t.text, 6, true
	}
	return "", 0, false
}

// opPrec is the precedence of a binary operator; 0 for anything else.
func opPrec(op string) int {
	_, prec, _ := binOp(token{kind: binOpKinds[op], text: op})
	return prec
}

var binOpKinds = map[string]tokKind{
	"or": tIdent, "and": tIdent, "unless": tIdent,
	"==": tCmpEq, "!=": tNeq, ">": tGt, ">=": tGte, "<": tLt, "<=": tLte,
	"+": tAdd, "-": tSub, "*": tMul, "/": tDiv, "%": tMod, "^": tPow,
}

func isComparison(op string) bool { return opPrec(op) == 3 }
func isSetOp(op string) bool      { return op == "and" || op == "or" || op == "unless" }

// expr parses an expression whose binary operators bind at least as
// tightly as minPrec.
func (p *parser) expr(minPrec int) (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	lhsPos := p.peek().pos
	lhs, err := p.operand()
	if err != nil {
		return nil, err
	}
	for {
		opTok := p.peek()
		op, prec, ok := binOp(opTok)
		if !ok || prec < minPrec {
			return lhs, nil
		}
		p.next()
		be := &BinaryExpr{Op: op}
		if err := p.binModifiers(be, opTok); err != nil {
			return nil, err
		}
		next := prec + 1
		if op == "^" {
			next = prec // right associative
		}
		rhsPos := p.peek().pos
		rhs, err := p.expr(next)
		if err != nil {
			return nil, err
		}
		if be.LHS, err = p.binLeg(lhs, "left", op, lhsPos); err != nil {
			return nil, err
		}
		if be.RHS, err = p.binLeg(rhs, "right", op, rhsPos); err != nil {
			return nil, err
		}
		lhs = be
	}
}

// binLeg checks one operand of a binary operation.
func (p *parser) binLeg(e Expr, side, op string, pos int) (SampleExpr, error) {
	se, ok := e.(SampleExpr)
	if !ok {
		return nil, p.errAt(pos, "unexpected type for %s leg of binary operation (%s): log query", side, op)
	}
	if lit, ok := e.(*LiteralExpr); ok && isSetOp(op) {
		return nil, p.errAt(pos, "unexpected literal for %s leg of logical/set binary operation (%s): %f", side, op, lit.Value)
	}
	return se, nil
}

// binModifiers parses the bool modifier and vector matching after a
// binary operator.
func (p *parser) binModifiers(be *BinaryExpr, opTok token) error {
	if t := p.peek(); isWord(t, "bool") {
		if !isComparison(be.Op) {
			return p.errAt(t.pos, "bool modifier can only be used on comparison operators")
		}
		p.next()
		be.ReturnBool = true
	}
	t := p.peek()
	if !(isWord(t, "on") || isWord(t, "ignoring")) || p.peekAt(1).kind != tLParen {
		return nil
	}
	p.next()
	labels, err := p.labelList()
	if err != nil {
		return err
	}
	vm := &VectorMatching{On: t.text == "on", Labels: labels}
	be.Matching = vm
	g := p.peek()
	if !isWord(g, "group_left") && !isWord(g, "group_right") {
		return nil
	}
	if isSetOp(be.Op) {
		return p.errAt(g.pos, "no grouping allowed for %q operation", be.Op)
	}
	p.next()
	vm.Card = ManyToOne
	if g.text == "group_right" {
		vm.Card = OneToMany
	}
	// A parenthesis after group_x opens its label list unless it opens
	// the right operand: a label list holds only names.
	if p.peek().kind == tLParen {
		if n := p.peekAt(1); n.kind == tRParen || n.kind == tIdent && (p.peekAt(2).kind == tComma || p.peekAt(2).kind == tRParen) {
			if vm.Include, err = p.labelList(); err != nil {
				return err
			}
		}
	}
	for _, l := range vm.Include {
		if vm.On && slices.Contains(vm.Labels, l) {
			return p.errAt(g.pos, "label %q must not occur in ON and GROUP clause at once", l)
		}
	}
	return nil
}

// labelList parses (a, b, ...); an empty list is nil.
func (p *parser) labelList() ([]string, error) {
	if _, err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	var labels []string
	if p.peek().kind == tRParen {
		p.next()
		return nil, nil
	}
	for {
		t, err := p.expect(tIdent, "IDENTIFIER")
		if err != nil {
			return nil, err
		}
		labels = append(labels, t.text)
		t = p.peek()
		if t.kind == tRParen {
			p.next()
			return labels, nil
		}
		if t.kind != tComma {
			return nil, p.unexpected(t, ",", ")")
		}
		p.next()
	}
}

// grouping parses `by (...)` or `without (...)` if one is next.
func (p *parser) grouping() (*Grouping, error) {
	t := p.peek()
	if !isWord(t, "by") && !isWord(t, "without") {
		return nil, nil
	}
	p.next()
	labels, err := p.labelList()
	if err != nil {
		return nil, err
	}
	return &Grouping{Without: t.text == "without", Labels: labels}, nil
}

// operand parses what a binary operator applies to.
func (p *parser) operand() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tNumber, tAdd, tSub:
		n, err := p.signedNumber()
		if err != nil {
			return nil, err
		}
		return &LiteralExpr{Value: n.num}, nil
	case tLBrace:
		return p.logExpr()
	case tLParen:
		p.next()
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return e, nil
	case tIdent:
		n := p.peekAt(1)
		call := n.kind == tLParen
		switch {
		case rangeOps[t.text] && call:
			return p.rangeAggregation()
		case vectorOps[t.text] && (call || isWord(n, "by") || isWord(n, "without")):
			return p.vectorAggregation()
		case t.text == "vector" && call:
			return p.vector()
		case t.text == "label_replace" && call:
			return p.labelReplace()
		}
	}
	return nil, p.unexpected(t)
}

// sampleArg parses an expression that must be a metric query, as an
// argument of a function.
func (p *parser) sampleArg() (SampleExpr, error) {
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	se, ok := e.(SampleExpr)
	if !ok {
		// Loki's grammar takes only metric queries here, so it fails at
		// the token after the log query.
		return nil, p.unexpected(p.peek())
	}
	return se, nil
}

// rangeAggregation parses op([param,] log-range) [grouping].
func (p *parser) rangeAggregation() (Expr, error) {
	opTok := p.next()
	p.next() // (
	ra := &RangeAggregation{Op: opTok.text}
	var param *token
	if k := p.peek().kind; k == tNumber || k == tAdd || k == tSub {
		n, err := p.signedNumber()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tComma, ","); err != nil {
			return nil, err
		}
		param, ra.Param = &n, n.num
	}
	var err error
	if ra.Range, err = p.logRange(); err != nil {
		return nil, err
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	if ra.Grouping, err = p.grouping(); err != nil {
		return nil, err
	}
	switch {
	case param != nil && ra.Op != "quantile_over_time":
		return nil, p.errAt(opTok.pos, "parameter %s not supported for operation %s", param.text, ra.Op)
	case param == nil && ra.Op == "quantile_over_time":
		return nil, p.errAt(opTok.pos, "parameter required for operation %s", ra.Op)
	case ra.Grouping != nil && !rangeGroupingAllowed[ra.Op]:
		return nil, p.errAt(opTok.pos, "grouping not allowed for %s aggregation", ra.Op)
	case ra.Range.Unwrap != nil && !rangeUnwrapAllowed[ra.Op]:
		return nil, p.errAt(opTok.pos, "invalid aggregation %s with unwrap", ra.Op)
	case ra.Range.Unwrap == nil && !rangeUnwrapOptional[ra.Op]:
		return nil, p.errAt(opTok.pos, "invalid aggregation %s without unwrap", ra.Op)
	}
	return ra, nil
}

// logRange parses the log query of a range aggregation with its range.
// Loki accepts the range right after the selector or after the
// pipeline and unwrap, and either part in parentheses:
//
//	{a="b"} | json | unwrap x [5m] offset 1h
//	{a="b"}[5m] offset 1h | json | unwrap x
//	({a="b"} | json)[5m]
//	({a="b"} | json [5m])
func (p *parser) logRange() (*LogRange, error) {
	lr := &LogRange{}
	ranged, err := p.logRangeBody(lr)
	if err != nil {
		return nil, err
	}
	if !ranged {
		return nil, p.unexpected(p.peek(), "RANGE")
	}
	return lr, nil
}

// logRangeBody parses into lr and reports whether it read the range.
func (p *parser) logRangeBody(lr *LogRange) (bool, error) {
	if err := p.enter(); err != nil {
		return false, err
	}
	defer p.leave()
	if p.peek().kind == tLParen {
		p.next()
		ranged, err := p.logRangeBody(lr)
		if err != nil {
			return false, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return false, err
		}
		if !ranged && p.peek().kind == tRange {
			p.rangeOffset(lr)
			ranged = true
		}
		return ranged, nil
	}
	sel, err := p.selector()
	if err != nil {
		return false, err
	}
	lr.Log = &LogExpr{Selector: sel}
	ranged := false
	if p.peek().kind == tRange {
		p.rangeOffset(lr)
		ranged = true
	}
	if lr.Log.Pipeline, lr.Unwrap, err = p.pipeline(nil, true); err != nil {
		return false, err
	}
	if !ranged && p.peek().kind == tRange {
		p.rangeOffset(lr)
		ranged = true
	}
	return ranged, nil
}

// rangeOffset reads the range token that is next and an offset after
// it.
func (p *parser) rangeOffset(lr *LogRange) {
	lr.Interval = p.next().dur
	if isWord(p.peek(), "offset") && p.peekAt(1).kind == tDuration {
		p.next()
		lr.Offset = p.next().dur
	}
}

// unwrap parses what follows `| unwrap`: label or conv(label), then the
// label filters, each after a `|`.
func (p *parser) unwrap() (*Unwrap, error) {
	t, err := p.expect(tIdent, "IDENTIFIER")
	if err != nil {
		return nil, err
	}
	u := &Unwrap{Label: t.text}
	switch t.text {
	case "duration", "duration_seconds", "bytes":
		if p.peek().kind != tLParen {
			break
		}
		p.next()
		l, err := p.expect(tIdent, "IDENTIFIER")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		u.Conv, u.Label = t.text, l.text
	}
	for p.peek().kind == tPipe {
		p.next()
		if n := p.peek(); n.kind != tLParen && !(n.kind == tIdent && isFilterName(n.text)) {
			return nil, p.unexpected(n)
		}
		f, err := p.labelFilter()
		if err != nil {
			return nil, err
		}
		u.Filters = append(u.Filters, f)
	}
	return u, nil
}

// vectorAggregation parses op [grouping] ([param,] expr) [grouping].
func (p *parser) vectorAggregation() (Expr, error) {
	opTok := p.next()
	va := &VectorAggregation{Op: opTok.text}
	var err error
	if va.Grouping, err = p.grouping(); err != nil {
		return nil, err
	}
	if _, err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	var param *token
	if k := p.peek().kind; k == tNumber && p.peekAt(1).kind == tComma || (k == tAdd || k == tSub) && p.peekAt(1).kind == tNumber && p.peekAt(2).kind == tComma {
		n, _ := p.signedNumber()
		p.next() // ,
		param = &n
	}
	if va.Expr, err = p.sampleArg(); err != nil {
		return nil, err
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	if t := p.peek(); isWord(t, "by") || isWord(t, "without") {
		if va.Grouping != nil {
			return nil, p.unexpected(t)
		}
		if va.Grouping, err = p.grouping(); err != nil {
			return nil, err
		}
	}
	switch va.Op {
	case "topk", "bottomk", "approx_topk":
		if param == nil {
			return nil, p.errAt(opTok.pos, "parameter required for operation %s", va.Op)
		}
		k, err := strconv.Atoi(param.text)
		if err != nil {
			return nil, p.errAt(param.pos, "invalid parameter %s(%s,", va.Op, param.text)
		}
		if k <= 0 {
			return nil, p.errAt(param.pos, "invalid parameter (must be greater than 0) %s(%s,", va.Op, param.text)
		}
		va.Param = k
	default:
		if param != nil {
			return nil, p.errAt(param.pos, "unsupported parameter for operation %s(%s,", va.Op, param.text)
		}
	}
	// As Loki, after the checks of k: approx_topk has no grouping.
	if va.Grouping != nil && (va.Op == "sort" || va.Op == "sort_desc" || va.Op == "approx_topk") {
		return nil, p.errAt(opTok.pos, "grouping not allowed for %s aggregation", va.Op)
	}
	return va, nil
}

// vector parses vector(number).
func (p *parser) vector() (Expr, error) {
	p.next()
	p.next() // (
	n, err := p.signedNumber()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	return &VectorExpr{Value: n.num}, nil
}

// labelReplace parses label_replace(expr, "dst", "replacement", "src",
// "regex").
func (p *parser) labelReplace() (Expr, error) {
	p.next()
	p.next() // (
	lr := &LabelReplace{}
	var err error
	if lr.Expr, err = p.sampleArg(); err != nil {
		return nil, err
	}
	var args [4]token
	for i := range args {
		if _, err := p.expect(tComma, ","); err != nil {
			return nil, err
		}
		if args[i], err = p.expect(tString, "STRING"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	lr.Dst, lr.Replacement, lr.Src, lr.Regex = args[0].str, args[1].str, args[2].str, args[3].str
	if !isLabelName(lr.Dst) {
		return nil, p.errAt(args[0].pos, "invalid destination label name in label_replace(): %s", lr.Dst)
	}
	if lr.Re, err = regexp.Compile("^(?:" + lr.Regex + ")$"); err != nil {
		return nil, p.errAt(args[3].pos, "invalid regex in label_replace: %v", err)
	}
	return lr, nil
}
