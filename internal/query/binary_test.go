package query

import (
	"strconv"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

func matchOn(names ...string) *logql.VectorMatching {
	return &logql.VectorMatching{On: true, Labels: names}
}

func matchIgnoring(names ...string) *logql.VectorMatching {
	return &logql.VectorMatching{Labels: names}
}

func groupLeft(m *logql.VectorMatching, include ...string) *logql.VectorMatching {
	m.Card, m.Include = logql.ManyToOne, include
	return m
}

func groupRight(m *logql.VectorMatching, include ...string) *logql.VectorMatching {
	m.Card, m.Include = logql.OneToMany, include
	return m
}

type binaryTest struct {
	name     string
	op       string
	bool     bool
	matching *logql.VectorMatching
	lhs, rhs string
	want     string // the result, or with wantErr a part of the error
	wantErr  bool
}

func runBinaryTests(t *testing.T, tests []binaryTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lhs, rhs := testMatrix(t, tt.lhs), testMatrix(t, tt.rhs)
			before := []string{formatMatrix(lhs), formatMatrix(rhs)}
			e := &logql.BinaryExpr{Op: tt.op, ReturnBool: tt.bool, Matching: tt.matching}
			got, err := evalBinary(e, lhs, rhs)
			if tt.wantErr {
				checkErrContains(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkOperatorResult(t, []*matrix{lhs, rhs}, before, got, tt.want)
		})
	}
}

func TestBinaryScalar(t *testing.T) {
	runBinaryTests(t, []binaryTest{
		{name: "scalar + scalar", op: "+", lhs: "scalar 1 2", rhs: "scalar 3 4", want: "scalar 4 6"},
		{name: "scalar ^ scalar", op: "^", lhs: "scalar 2 2", rhs: "scalar 10 0.5", want: "scalar 1024 1.4142135623730951"},
		{name: "scalar / zero", op: "/", lhs: "scalar 1 -1 0", rhs: "scalar 0 0 0", want: "scalar NaN NaN NaN"},
		{name: "scalar % zero", op: "%", lhs: "scalar 1 -7", rhs: "scalar 0 3", want: "scalar NaN -1"},
		{name: "scalar > bool scalar", op: ">", bool: true, lhs: "scalar 1 2 NaN", rhs: "scalar 2 1 NaN", want: "scalar 0 1 0"},
		{name: "scalar != bool NaN", op: "!=", bool: true, lhs: "scalar NaN", rhs: "scalar NaN", want: "scalar 1"},
		{name: "scalar comparison needs bool", op: "==", lhs: "scalar 1", rhs: "scalar 1", wantErr: true,
			want: "comparisons between scalars must use BOOL modifier"},
		{name: "scalar and scalar", op: "and", lhs: "scalar 1", rhs: "scalar 1", wantErr: true,
			want: `set operator "and" not allowed in binary scalar expression`},

		{name: "vector * scalar", op: "*", lhs: `{a="1"} 1 _ 3`, rhs: "scalar 2 2 2", want: `{a="1"} 2 _ 6`},
		{name: "scalar - vector", op: "-", lhs: "scalar 10 10 10", rhs: `{a="1"} 1 _ 3`, want: `{a="1"} 9 _ 7`},
		{name: "vector / zero", op: "/", lhs: `{a="1"} 1 -1 0`, rhs: "scalar 0 0 0", want: `{a="1"} NaN NaN NaN`},
		{name: "vector % scalar", op: "%", lhs: `{a="1"} 7 -7 7 1`, rhs: "scalar 3 3 0 +Inf", want: `{a="1"} 1 -1 NaN 1`},
		{name: "scalar ^ vector", op: "^", lhs: "scalar 2 2", rhs: `{a="1"} 3 -1`, want: `{a="1"} 8 0.5`},
		{name: "vector + NaN", op: "+", lhs: `{a="1"} 1`, rhs: "scalar NaN", want: `{a="1"} NaN`},
		{name: "vector > scalar filters", op: ">", lhs: `{a="1"} 1 _ 3` + "\n" + `{a="2"} 0 0 0`, rhs: "scalar 2 2 2",
			want: `{a="1"} _ _ 3`},
		{name: "scalar < vector keeps the vector's value", op: "<", lhs: "scalar 2 2 2", rhs: `{a="1"} 1 _ 3`,
			want: `{a="1"} _ _ 3`},
		{name: "scalar == vector", op: "==", lhs: "scalar 3", rhs: `{a="1"} 3` + "\n" + `{a="2"} 4`, want: `{a="1"} 3`},
		{name: "vector >= bool scalar", op: ">=", bool: true, lhs: `{a="1"} 1 _ 3`, rhs: "scalar 3 3 3", want: `{a="1"} 0 _ 1`},
		{name: "scalar > bool vector", op: ">", bool: true, lhs: "scalar 2 2 2", rhs: `{a="1"} 1 _ 3`, want: `{a="1"} 1 _ 0`},
		{name: "vector != NaN", op: "!=", lhs: `{a="1"} 1 NaN`, rhs: "scalar NaN NaN", want: `{a="1"} 1 NaN`},
		{name: "vector == NaN", op: "==", lhs: `{a="1"} 1 NaN`, rhs: "scalar NaN NaN", want: "steps 2"},
		{name: "vector <= bool NaN", op: "<=", bool: true, lhs: `{a="1"} NaN`, rhs: "scalar 1", want: `{a="1"} 0`},
		{name: "order kept", op: "+", lhs: `
			{a="2"} 1
			{a="1"} 2`, rhs: "scalar 1", want: `
			{a="2"} 2
			{a="1"} 3`},
		{name: "vector and scalar", op: "or", lhs: `{a="1"} 1`, rhs: "scalar 1", wantErr: true,
			want: `set operator "or" not allowed in binary scalar expression`},
		{name: "empty vector", op: "+", lhs: "steps 2", rhs: "scalar 1 1", want: "steps 2"},
	})
}

func TestBinaryVector(t *testing.T) {
	runBinaryTests(t, []binaryTest{
		{name: "all labels", op: "+", lhs: `
			{a="1"} 1 2 _
			{a="2"} 3 4 5`, rhs: `
			{a="1"} 10 _ 30
			{a="3"} 1  1 1`, want: `{a="1"} 11 _ _`},
		{name: "arithmetic", op: "-", lhs: `{a="1"} 1 2 3 4 5 6 7`, rhs: `{a="1"} 2 0 0 -1 2 2 NaN`,
			want: `{a="1"} -1 2 3 5 3 4 NaN`},
		{name: "division", op: "/", lhs: `{a="1"} 1 -1 0 6`, rhs: `{a="1"} 0 0 0 4`, want: `{a="1"} NaN NaN NaN 1.5`},
		{name: "modulo and power", op: "%", lhs: `{a="1"} 7 -7 7`, rhs: `{a="1"} 3 3 0`, want: `{a="1"} 1 -1 NaN`},
		{name: "power", op: "^", lhs: `{a="1"} 2 4 0`, rhs: `{a="1"} 3 0.5 -1`, want: `{a="1"} 8 2 +Inf`},
		{name: "ignoring", op: "*", matching: matchIgnoring("b"), lhs: `{a="1", b="x"} 2`, rhs: `{a="1", b="y"} 10`,
			want: `{a="1"} 20`},
		{name: "ignoring absent label", op: "*", matching: matchIgnoring("zz"), lhs: `{a="1", b="x"} 2`, rhs: `{a="1", b="x"} 10`,
			want: `{a="1", b="x"} 20`},
		{name: "on keeps only the on labels", op: "+", matching: matchOn("a"), lhs: `{a="1", b="x", c="z"} 1`, rhs: `{a="1", d="w"} 10`,
			want: `{a="1"} 11`},
		{name: "on nothing", op: "+", matching: matchOn(), lhs: `{a="1"} 1`, rhs: `{b="2"} 10`, want: `{} 11`},
		{name: "one-to-one needs one match", op: "+", matching: matchOn("a"), lhs: `
			{a="1", b="x"} 1
			{a="1", b="y"} 2`, rhs: `{a="1"} 10`, wantErr: true,
			want: "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"},
		{name: "one-to-one at different steps", op: "+", matching: matchOn("a"), lhs: `
			{a="1", b="x"} 1 _
			{a="1", b="y"} _ 2`, rhs: `{a="1"} 10 20`, want: `{a="1"} 11 22`},
		{name: "duplicate on the right", op: "+", matching: matchOn("a"), lhs: `{a="1"} 1`, rhs: `
			{a="1", b="x"} 1
			{a="1", b="y"} 2`, wantErr: true,
			want: `found duplicate series for the match group {a="1"} on the right hand-side of the operation: [{a="1", b="y"}, {a="1", b="x"}];many-to-many matching not allowed`},
		{name: "duplicate on the right, nothing on the left", op: "+", matching: matchOn("a"), lhs: `{a="1"} _ 1`, rhs: `
			{a="1", b="x"} 1 _
			{a="1", b="y"} 2 _`, want: "steps 2"},
		{name: "one-to-one filtered still unique", op: ">", matching: matchOn("a"), lhs: `
			{a="1", b="x"} 1
			{a="1", b="y"} 2`, rhs: `{a="1"} 10`, wantErr: true, want: "multiple matches for labels"},
		{name: "missing steps", op: "+", lhs: `{a="1"} 1 _ 3 _`, rhs: `{a="1"} 1 2 _ _`, want: `{a="1"} 2 _ _ _`},
		{name: "empty side", op: "+", lhs: `{a="1"} 1`, rhs: "steps 1", want: "steps 1"},

		{name: "group_left", op: "+", matching: groupLeft(matchOn("a"), "info"), lhs: `
			{a="1", b="x"}             1 2
			{a="1", b="y"}             3 4
			{a="2", b="x", info="old"} 5 6`, rhs: `
			{a="1", info="i1"} 10 100
			{a="2"}            20 _`, want: `
			{a="1", b="x", info="i1"} 11 102
			{a="1", b="y", info="i1"} 13 104
			{a="2", b="x"}            25 _`},
		{name: "group_left ignoring", op: "*", matching: groupLeft(matchIgnoring("b")), lhs: `
			{a="1", b="x", c="1"} 1
			{a="1", b="x", c="2"} 2`, rhs: `{a="1", b="y", c="1"} 10`, want: `{a="1", b="x", c="1"} 10`},
		{name: "group_left without include", op: "*", matching: groupLeft(matchOn("a")), lhs: `
			{a="1", c="1"} 1
			{a="1", c="2"} 2`, rhs: `{a="1", d="z"} 10`, want: `
			{a="1", c="1"} 10
			{a="1", c="2"} 20`},
		{name: "group_left labels not unique", op: "+", matching: groupLeft(matchIgnoring("c"), "c"), lhs: `
			{a="1", c="1"} 1
			{a="1", c="2"} 2`, rhs: `{a="1", c="9"} 10`, wantErr: true,
			want: "multiple matches for labels: grouping labels must ensure unique matches"},
		{name: "group_left duplicate on the one side", op: "+", matching: groupLeft(matchOn("a")), lhs: `{a="1", c="1"} 1`, rhs: `
			{a="1", d="1"} 1
			{a="1", d="2"} 2`, wantErr: true, want: "on the right hand-side"},
		{name: "group_right", op: "-", matching: groupRight(matchOn("a"), "info"), lhs: `{a="1", info="i1"} 10`, rhs: `
			{a="1", b="x"} 1
			{a="1", b="y"} 3`, want: `
			{a="1", b="x", info="i1"} 9
			{a="1", b="y", info="i1"} 7`},
		{name: "group_right duplicate on the one side", op: "-", matching: groupRight(matchOn("a")), lhs: `
			{a="1", b="1"} 1
			{a="1", b="2"} 2`, rhs: `{a="1", c="1"} 1`, wantErr: true, want: "on the left hand-side"},
		{name: "group_right comparison keeps the LHS value", op: ">", matching: groupRight(matchOn("a")), lhs: `{a="1"} 10`, rhs: `
			{a="1", b="x"} 1
			{a="1", b="y"} 20`, want: `{a="1", b="x"} 10`},
		{name: "group_left bool", op: "<", bool: true, matching: groupLeft(matchOn("a")), lhs: `
			{a="1", b="x"} 1
			{a="1", b="y"} 20`, rhs: `{a="1"} 10`, want: `
			{a="1", b="x"} 1
			{a="1", b="y"} 0`},

		{name: "comparison filters", op: ">", lhs: `
			{a="1"} 1 5
			{a="2"} 3 3`, rhs: `
			{a="1"} 2 2
			{a="2"} 3 1`, want: `
			{a="1"} _ 5
			{a="2"} _ 3`},
		{name: "comparison bool", op: ">", bool: true, lhs: `
			{a="1"} 1 5 _
			{a="2"} 3 3 3`, rhs: `
			{a="1"} 2 2 2
			{a="2"} 3 1 _`, want: `
			{a="1"} 0 1 _
			{a="2"} 0 1 _`},
		{name: "==", op: "==", lhs: `{a="1"} 1 3`, rhs: `{a="1"} 1 2`, want: `{a="1"} 1 _`},
		{name: "!=", op: "!=", lhs: `{a="1"} 1 3`, rhs: `{a="1"} 1 2`, want: `{a="1"} _ 3`},
		{name: ">=", op: ">=", lhs: `{a="1"} 1 3 1`, rhs: `{a="1"} 1 2 2`, want: `{a="1"} 1 3 _`},
		{name: "<", op: "<", lhs: `{a="1"} 1 3 1`, rhs: `{a="1"} 1 2 2`, want: `{a="1"} _ _ 1`},
		{name: "<=", op: "<=", lhs: `{a="1"} 1 3 1`, rhs: `{a="1"} 1 2 2`, want: `{a="1"} 1 _ 1`},
		{name: "NaN comparisons", op: "==", lhs: `{a="1"} NaN`, rhs: `{a="1"} NaN`, want: "steps 1"},
		{name: "NaN !=", op: "!=", lhs: `{a="1"} NaN +Inf`, rhs: `{a="1"} NaN +Inf`, want: `{a="1"} NaN _`},
		{name: "comparison on reduces labels", op: "<", matching: matchOn("a"), lhs: `{a="1", b="x"} 1`, rhs: `{a="1", c="y"} 2`,
			want: `{a="1"} 1`},

		{name: "label order", op: "+", matching: matchOn("b"), lhs: `
			{a="1", b="2"} 1
			{a="2", b="1"} 2`, rhs: `
			{b="1"} 1
			{b="2"} 1`, want: `
			{b="1"} 3
			{b="2"} 2`},
		{name: "order of a sorted instant vector", op: "+", matching: matchOn("b"), lhs: `
			{a="2", b="2"} 1
			{a="1", b="1"} 2`, rhs: `
			{b="1"} 1
			{b="2"} 1`, want: `
			{b="2"} 2
			{b="1"} 3`},
		{name: "order of a range", op: "+", matching: matchOn("b"), lhs: `
			{a="1", b="2"} 1 1
			{a="2", b="1"} 2 2`, rhs: `
			{b="1"} 1 1
			{b="2"} 1 1`, want: `
			{b="1"} 3 3
			{b="2"} 2 2`},

		{name: "set operator with group_left", op: "and", matching: groupLeft(matchOn("a")), lhs: `{a="1"} 1`, rhs: `{a="1"} 1`,
			wantErr: true, want: `no grouping allowed for "and" operation`},
		{name: "bool on arithmetic", op: "+", bool: true, lhs: `{a="1"} 1`, rhs: `{a="1"} 1`,
			wantErr: true, want: "bool modifier can only be used on comparison operators"},
		{name: "bool on set operator", op: "or", bool: true, lhs: `{a="1"} 1`, rhs: `{a="1"} 1`,
			wantErr: true, want: "bool modifier can only be used on comparison operators"},
		{name: "unknown operator", op: "atan2", lhs: `{a="1"} 1`, rhs: `{a="1"} 1`,
			wantErr: true, want: `unknown binary operator "atan2"`},
		{name: "different steps", op: "+", lhs: `{a="1"} 1`, rhs: `{a="1"} 1 2`,
			wantErr: true, want: "operands have different steps"},
	})
}

func TestBinarySet(t *testing.T) {
	lhs := `
		{a="1"} 1 1 _
		{a="2"} 2 _ 2`
	rhs := `
		{a="1", b="x"} 9 _ 9
		{a="3"}        3 3 3`
	runBinaryTests(t, []binaryTest{
		{name: "and on", op: "and", matching: matchOn("a"), lhs: lhs, rhs: rhs, want: `{a="1"} 1 _ _`},
		{name: "and all labels", op: "and", lhs: lhs, rhs: rhs, want: "steps 3"},
		{name: "and ignoring", op: "and", matching: matchIgnoring("b"), lhs: lhs, rhs: rhs, want: `{a="1"} 1 _ _`},
		{name: "and on nothing", op: "and", matching: matchOn(), lhs: lhs, rhs: rhs, want: `
			{a="1"} 1 1 _
			{a="2"} 2 _ 2`},
		{name: "and empty", op: "and", lhs: lhs, rhs: "steps 3", want: "steps 3"},
		{name: "unless on", op: "unless", matching: matchOn("a"), lhs: lhs, rhs: rhs, want: `
			{a="1"} _ 1 _
			{a="2"} 2 _ 2`},
		{name: "unless empty", op: "unless", lhs: lhs, rhs: "steps 3", want: lhs},
		{name: "unless on nothing", op: "unless", matching: matchOn(), lhs: lhs, rhs: rhs, want: "steps 3"},
		{name: "or on", op: "or", matching: matchOn("a"), lhs: lhs, rhs: rhs, want: `
			{a="1"}        1 1 _
			{a="1", b="x"} _ _ 9
			{a="2"}        2 _ 2
			{a="3"}        3 3 3`},
		{name: "or all labels", op: "or", lhs: lhs, rhs: rhs, want: `
			{a="1"}        1 1 _
			{a="1", b="x"} 9 _ 9
			{a="2"}        2 _ 2
			{a="3"}        3 3 3`},
		{name: "or merges a label set", op: "or", lhs: `{a="1"} 1 _ NaN`, rhs: `{a="1"} 5 6 _`, want: `{a="1"} 1 6 NaN`},
		{name: "or empty left", op: "or", lhs: "steps 3", rhs: rhs, want: rhs},
		{name: "or keeps values", op: "or", lhs: `{a="1"} NaN`, rhs: `{a="2"} +Inf`, want: "{a=\"1\"} NaN\n{a=\"2\"} +Inf"},
		{name: "or of a sorted instant vector", op: "or", lhs: `
			{a="2"} 1
			{a="1"} 2`, rhs: `{a="0"} 3`, want: `
			{a="2"} 1
			{a="1"} 2
			{a="0"} 3`},
		{name: "or of instant vectors in label order", op: "or", lhs: `{a="2"} 1`, rhs: `{a="1"} 3`, want: `
			{a="1"} 3
			{a="2"} 1`},
		{name: "duplicate labels", op: "or", lhs: "{a=\"1\"} 1\n{a=\"1\"} 2", rhs: "steps 1", wantErr: true,
			want: "vector cannot contain metrics with the same labelset"},
	})
}

func BenchmarkBinary(b *testing.B) {
	lhs, rhs := newMatrix(0, 1, 100), newMatrix(0, 1, 100)
	for i := range 1000 {
		ls := record.Labels{{Name: "app", Value: strconv.Itoa(i % 10)}, {Name: "pod", Value: strconv.Itoa(i)}}
		l, r := lhs.add(ls), rhs.add(ls)
		for j := range l.vals {
			l.set(j, float64(i+j))
			r.set(j, float64(j+1))
		}
	}
	for _, op := range []string{"/", "and"} {
		b.Run("op="+op, func(b *testing.B) {
			b.ReportAllocs()
			e := &logql.BinaryExpr{Op: op}
			for b.Loop() {
				if _, err := evalBinary(e, lhs, rhs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
