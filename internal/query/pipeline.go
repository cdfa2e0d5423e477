package query

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/logql"
)

// stage is one compiled pipeline stage. process returns the row's line,
// changed or not, and false when the row is filtered out. The line it
// returns may view a buffer of the stage valid until its next call.
//
// Concurrency: a stage keeps scratch buffers; one goroutine uses it.
// Compile a pipeline per goroutine.
type stage interface {
	process(ts int64, line []byte, lb *labelsBuilder) ([]byte, bool)
}

// pipeline is a compiled log pipeline.
type pipeline struct {
	stages []stage
}

// compilePipeline compiles the stages of a log query.
func compilePipeline(stages []logql.Stage) (*pipeline, error) {
	p := &pipeline{}
	for _, s := range stages {
		c, err := compileStage(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		p.stages = append(p.stages, c)
	}
	return p, nil
}

// process runs a row through every stage.
func (p *pipeline) process(ts int64, line []byte, lb *labelsBuilder) ([]byte, bool) {
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
