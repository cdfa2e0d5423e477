package query

import (
	"sync"

	"github.com/sluicelog/sluice/internal/store/part"
)

// planShare holds the plans of templates (tmplPlan, as planCached keeps
// them) that an engine's queries have made, by what the plans depend on:
// the json stage's paths or observed fields, and the template's shape.
// A query meets mostly shapes that the queries before it met, and
// planning them again was a third of a selective query's profile
// (`{host="node-07"} | json level | level="error"` at 10 s steps: 48,000
// rows in 8 blocks of some 240 templates each, nearly every shape new to
// the query). A plan in it is never changed: queries share it as the
// blocks of one query do.
type planShare struct {
	mu    sync.Mutex
	plans map[planShareKey]*tmplPlan
}

// planShareKey names a plan: the colPlanner's stageKey and a shape.
type planShareKey struct {
	stage string
	shape part.Shape
}

// maxSharedPlans bounds the plans an engine keeps; when full, it starts
// over.
const maxSharedPlans = 1 << 15

// get returns the plan of key k, or nil.
func (s *planShare) get(k planShareKey) *tmplPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plans[k]
}

// put keeps plan p under key k.
func (s *planShare) put(k planShareKey, p *tmplPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plans == nil || len(s.plans) >= maxSharedPlans {
		s.plans = map[planShareKey]*tmplPlan{}
	}
	s.plans[k] = p
}
