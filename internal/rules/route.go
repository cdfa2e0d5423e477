package rules

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/sluicelog/sluice/internal/record"
)

// MaxSinks bounds the sinks one rules file routes to: a record's routes
// are a bit set while the rules run.
const MaxSinks = 64

// Sinks are the sinks a rules file may route to, by name: true for a sink
// that takes routed records (a sink with from: rules), false for one that
// takes its subscription (a tenant, a selector) and would ignore routes.
// A nil Sinks checks no name (sluice rules check without a config).
type Sinks map[string]bool

// CompileRouted is Compile, checking every route against sinks: a route
// to a sink that is not configured, or that does not take routed
// records, is a load error naming the rule and the sink. A nil sinks
// checks nothing.
func CompileRouted(name string, data []byte, m *Metrics, sinks Sinks) (*Set, error) {
	return compileRouted(name, data, m, sinks, nil)
}

// compileRouted is CompileRouted keeping what prev compiled (compileFrom).
func compileRouted(name string, data []byte, m *Metrics, sinks Sinks, prev *Set) (*Set, error) {
	s, err := compileFrom(name, data, m, prev)
	if err != nil || sinks == nil {
		return s, err
	}
	l := &loader{}
	for _, r := range s.rules {
		where := fmt.Sprintf("rule %d (%s)", r.index+1, r.name)
		for _, sk := range r.route {
			from, ok := sinks[sk]
			switch {
			case !ok:
				l.add(problemAt{r.spec, "route"}, "%s: route: no sink named %q is configured (sinks: %s)", where, sk, sinkList(sinks))
			case !from:
				l.add(problemAt{r.spec, "route"}, "%s: route: sink %q does not take routed lines: give it from: rules in the config", where, sk)
			}
		}
	}
	if len(l.problems) > 0 {
		return nil, &Error{File: name, Problems: l.problems}
	}
	return s, nil
}

func sinkList(sinks Sinks) string {
	if len(sinks) == 0 {
		return "none"
	}
	var names []string
	for n := range sinks {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Sprint(names)
}

// indexRoutes numbers the sinks the rules route to and sets each rule's
// routeMask; more than MaxSinks is a problem.
func (s *Set) indexRoutes(l *loader) {
	for _, r := range s.rules {
		for _, sk := range r.route {
			if !slices.Contains(s.sinks, sk) {
				s.sinks = append(s.sinks, sk)
			}
		}
	}
	if len(s.sinks) > MaxSinks {
		for _, r := range s.rules {
			if len(r.route) > 0 {
				l.add(problemAt{r.spec, "route"}, "rule %d (%s): route: the rules route to %d sinks, more than %d", r.index+1, r.name, len(s.sinks), MaxSinks)
				break
			}
		}
		return
	}
	slices.Sort(s.sinks)
	for _, r := range s.rules {
		for _, sk := range r.route {
			i, _ := slices.BinarySearch(s.sinks, sk)
			r.routeMask |= 1 << i
		}
	}
}

// Sinks returns the names of the sinks the rules route to, sorted.
func (s *Set) Sinks() []string { return slices.Clone(s.sinks) }

// routeOf returns record i's route for mask: the index plus one of the
// list of its sinks in b.Routes, added if the batch has none yet, or 0
// when the batch holds record.MaxRoutes lists already.
func (ev *evaluator) routeOf(s *Set, b *record.Batch, mask uint64) uint16 {
	if k, ok := ev.routes[mask]; ok {
		return k
	}
	if len(b.Routes) >= record.MaxRoutes {
		return 0
	}
	names := make([]string, 0, 4)
	for m := mask; m != 0; m &= m - 1 {
		names = append(names, s.sinks[bits.TrailingZeros64(m)])
	}
	b.Routes = append(b.Routes, names)
	k := uint16(len(b.Routes))
	ev.routes[mask] = k
	return k
}
