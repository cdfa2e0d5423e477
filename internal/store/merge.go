package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
)

// maxMergeInputs bounds the parts merged at once.
const maxMergeInputs = 16

// mergeAll merges while some tenant, day and level has MergeFactor parts
// or more. Each merge writes one part of the next level, so a row is
// rewritten once per level: write amplification grows with the log, base
// MergeFactor, of the parts a day receives.
func (s *Store) mergeAll(ctx context.Context) error {
	s.mergeMu.Lock()
	defer s.mergeMu.Unlock()
	return s.mergeEach(ctx, s.pickMerge)
}

// mergeEach merges the groups pick returns until it returns none.
// REQUIRES: s.mergeMu held.
func (s *Store) mergeEach(ctx context.Context, pick func() []*livePart) error {
	for ctx.Err() == nil {
		group := pick()
		if group == nil {
			return nil
		}
		err := s.merge(ctx, group)
		for _, p := range group {
			p.release()
		}
		if errors.Is(err, part.ErrCorrupt) {
			// Don't retry the same group forever: leave its parts as
			// they are (readable up to the damage) and merge the others.
			s.mu.Lock()
			for _, p := range group {
				p.noMerge = true
			}
			s.mu.Unlock()
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// pickMerge returns, acquired, the parts of the first tenant, day and
// level that has enough of them, oldest first; nil if none has. (s.parts
// is in Seq order, so the parts of a level are merged in data order.)
func (s *Store) pickMerge() []*livePart {
	s.mu.Lock()
	defer s.mu.Unlock()
	type key struct {
		tenant, day string
		level       int
	}
	groups := map[key][]*livePart{}
	var keys []key
	for _, p := range s.parts {
		if p.noMerge {
			continue
		}
		k := key{p.info.Tenant, p.info.Day, p.info.Level}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	for _, k := range keys {
		g := groups[k]
		if len(g) < s.opts.MergeFactor {
			continue
		}
		slices.SortFunc(g, func(a, b *livePart) int { return cmp.Compare(a.info.Seq, b.info.Seq) })
		g = g[:min(len(g), maxMergeInputs)]
		for _, p := range g {
			p.acquire()
		}
		return g
	}
	return nil
}

// pickMergeDay returns, acquired, the parts of the first tenant and day
// that has more than one, whatever their levels, oldest first.
func (s *Store) pickMergeDay() []*livePart {
	s.mu.Lock()
	defer s.mu.Unlock()
	type key struct{ tenant, day string }
	groups := map[key][]*livePart{}
	for _, p := range s.parts { // in Seq order
		if p.noMerge {
			continue
		}
		k := key{p.info.Tenant, p.info.Day}
		groups[k] = append(groups[k], p)
	}
	for _, p := range s.parts {
		g := groups[key{p.info.Tenant, p.info.Day}]
		if p.noMerge {
			continue
		}
		if len(g) < 2 {
			continue
		}
		g = g[:min(len(g), maxMergeInputs)]
		for _, q := range g {
			q.acquire()
		}
		return g
	}
	return nil
}

// merge writes the rows of group, stream by stream in time order, into
// one part of the next level and swaps it in.
func (s *Store) merge(ctx context.Context, group []*livePart) error {
	info := partInfo{ID: s.nextID(), Tenant: group[0].info.Tenant, Day: group[0].info.Day, Level: group[0].info.Level + 1}
	var inputWritten int64
	ids := make([]uint64, len(group))
	info.Seq = group[0].info.Seq
	for i, p := range group {
		info.Seq = min(info.Seq, p.info.Seq)
		inputWritten += p.info.Written
		ids[i] = p.info.ID
		info.Level = max(info.Level, p.info.Level+1)
	}
	streams := map[string]record.Labels{}
	for _, p := range group {
		for _, ls := range p.rd.Streams {
			streams[ls.String()] = ls
		}
	}
	keys := make([]string, 0, len(streams))
	for k := range streams {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	err := s.writePart(&info, func(w *part.Writer) error {
		for _, k := range keys {
			var its []rowIter
			for _, p := range group {
				if si, ok := p.streams[k]; ok {
					// Every block is read once: Drop.
					if it := newPartIter(p.rd, si, math.MinInt64, math.MaxInt64, ScanOptions{Drop: true}); it != nil {
						its = append(its, it)
					}
				}
			}
			if err := w.StartStream(streams[k]); err != nil {
				return err
			}
			err := mergeRows(ctx, its, false, func(r *rows.Row, names []string) error { return w.Add(r, names) })
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("merge parts %v: %w", ids, err)
	}
	info.Written = info.Size + inputWritten
	lp, err := s.openPart(info)
	if err != nil {
		return fmt.Errorf("merge parts %v: reopen: %w", ids, err)
	}
	if err := s.commit([]*livePart{lp}, ids, 0, nil); err != nil {
		return fmt.Errorf("merge parts %v: %w", ids, err)
	}
	s.mu.Lock()
	s.stats.Merges++
	s.stats.MergedBytes += info.Size
	s.mu.Unlock()
	return nil
}

// applyRetention drops the parts that are past the retention age, then a
// tenant's oldest parts while it is over its size limit.
func (s *Store) applyRetention() error {
	if s.opts.Retention <= 0 && s.opts.MaxTenantBytes <= 0 {
		return nil
	}
	cutoff := s.opts.Now().Add(-s.opts.Retention).UnixNano()
	s.mu.Lock()
	var drop []uint64
	byTenant := map[string][]partInfo{}
	for _, p := range s.parts {
		if s.opts.Retention > 0 && p.info.MaxTime < cutoff {
			drop = append(drop, p.info.ID)
			continue
		}
		byTenant[p.info.Tenant] = append(byTenant[p.info.Tenant], p.info)
	}
	if s.opts.MaxTenantBytes > 0 {
		for _, ps := range byTenant {
			var total int64
			for _, p := range ps {
				total += p.Size
			}
			slices.SortFunc(ps, func(a, b partInfo) int { return cmp.Or(cmp.Compare(a.MaxTime, b.MaxTime), cmp.Compare(a.ID, b.ID)) })
			for _, p := range ps {
				if total <= s.opts.MaxTenantBytes {
					break
				}
				drop = append(drop, p.ID)
				total -= p.Size
			}
		}
	}
	s.mu.Unlock()
	if len(drop) == 0 {
		return nil
	}
	if err := s.commit(nil, drop, 0, nil); err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	s.mu.Lock()
	s.stats.DroppedParts += int64(len(drop))
	s.mu.Unlock()
	return nil
}
