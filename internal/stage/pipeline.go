package stage

import (
	"fmt"
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
)

// stage is one compiled pipeline stage. process returns the row's line,
// changed or not, and false when the row is filtered out. The line it
// returns may view a buffer of the stage valid until its next call.
//
// Concurrency: a stage keeps scratch buffers; one goroutine uses it.
// Compile a pipeline per goroutine.
type stage interface {
	process(ts int64, line []byte, lb *Labels) ([]byte, bool)
}

// Pipeline is a compiled log pipeline.
//
// Concurrency: its stages keep scratch buffers; one goroutine uses a
// Pipeline. Compile one per goroutine.
type Pipeline struct {
	stages []stage
}

// Compile compiles the stages of a log query's pipeline. An error names
// the stage it is about.
func Compile(stages []logql.Stage) (*Pipeline, error) {
	p := &Pipeline{}
	for _, s := range stages {
		c, err := compileStage(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		p.stages = append(p.stages, c)
	}
	return p, nil
}

// CompileObserving compiles a pipeline whose parsers set only the
// labels o observes (see ObservedBy); nil o is Compile.
func CompileObserving(stages []logql.Stage, o *Observed) (*Pipeline, error) {
	return compileObserving(stages, o, true)
}

// compileObserving is CompileObserving; deferErrs false leaves every
// json stage's errors read where the stage runs (the plain way, which
// the tests compare the deferred one with).
func compileObserving(stages []logql.Stage, o *Observed, deferErrs bool) (*Pipeline, error) {
	p, err := Compile(stages)
	if err != nil || o == nil {
		return p, err
	}
	for _, s := range p.stages {
		switch s := s.(type) {
		case *jsonStage:
			s.observed = o
		case *logfmtStage:
			s.observed = o
			s.stopEarly()
		case *unpackStage:
			s.observed = o
		case *regexpStage:
			s.observe(o)
		case *patternStage:
			s.observe(o)
		}
	}
	if deferErrs {
		p.deferJSONErrors()
	}
	return p, nil
}

// deferJSONErrors moves the read of a json stage's line after its
// observed labels are set (the read for its errors) past the label
// filters that follow it, when they are string filters of other labels
// than the errors: a row they drop would never show those errors, and
// most rows of `| json | level="error"` are dropped. A jsonSettle after
// the filters reads the rest for the rows they keep, before any stage
// that could see or change the errors.
func (p *Pipeline) deferJSONErrors() {
	for k := 0; k < len(p.stages); k++ {
		j, ok := p.stages[k].(*jsonStage)
		if !ok || j.params != nil || j.observed == nil {
			continue
		}
		end := k + 1
		for end < len(p.stages) {
			f, ok := p.stages[end].(*labelFilterStage)
			if !ok || !f.errorBlind {
				break
			}
			end++
		}
		if end == k+1 {
			continue
		}
		j.deferErrs = true
		p.stages = slices.Insert(p.stages, end, stage(jsonSettle{j}))
		k = end
	}
}

// CompileFilters compiles label filters as a pipeline of label filter
// stages, one per filter: those that follow unwrap in a range
// aggregation.
func CompileFilters(filters []logql.LabelFilter) (*Pipeline, error) {
	p := &Pipeline{}
	for _, f := range filters {
		st, err := newLabelFilterStage(f)
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, st)
	}
	return p, nil
}

// Process runs a row at time ts through every stage. lb holds the row's
// labels (Reset for the row, its structured metadata added) and the
// stages change them. It returns the row's line, changed or not, and
// false when a stage filters the row out. The line may view a buffer of
// a stage, valid until the next call.
func (p *Pipeline) Process(ts int64, line []byte, lb *Labels) ([]byte, bool) {
	for _, s := range p.stages {
		var ok bool
		if line, ok = s.process(ts, line, lb); !ok {
			return nil, false
		}
	}
	return line, true
}

func compileStage(s logql.Stage) (stage, error) {
	switch s := s.(type) {
	case *logql.LineFilter:
		return newLineFilter(s)
	case *logql.JSONParser:
		return newJSONStage(s)
	case *logql.LogfmtParser:
		return newLogfmtStage(s)
	case *logql.RegexpParser:
		return newRegexpStage(s)
	case *logql.PatternParser:
		return newPatternStage(s)
	case *logql.Unpack:
		return newUnpackStage(s)
	case *logql.LabelFilterStage:
		return newLabelFilterStage(s.Filter)
	case *logql.LineFormat:
		return newLineFormatStage(s)
	case *logql.LabelFormat:
		return newLabelFormatStage(s)
	case *logql.Drop:
		return newDropStage(s)
	case *logql.Keep:
		return newKeepStage(s)
	case *logql.Decolorize:
		return newDecolorizeStage(s)
	default:
		return nil, fmt.Errorf("pipeline stage %T is not supported", s)
	}
}
