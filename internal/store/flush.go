package store

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
)

// dayOf returns the UTC day of a Unix ns time, as YYYY-MM-DD.
func dayOf(ns int64) string { return time.Unix(0, ns).UTC().Format(time.DateOnly) }

// dayRange returns the Unix ns bounds [start, end) of the UTC day of ns.
func dayRange(ns int64) (int64, int64) {
	const day = int64(24 * time.Hour)
	start := ns - ((ns%day)+day)%day
	return start, start + day
}

// flushWorkers bounds the parts a flush writes at once. A flush of many
// small tenants is a file fsync and a directory fsync per part: written
// one after another, 5,000 tenants took 22 s; the disk takes several
// syncs at once at little more cost than one.
const flushWorkers = 8

// smallPart is the most rows a part may have to be written alongside
// others: a part writer holds up to a block (32768 rows) per CPU in
// flight, so larger parts are written one at a time, and a flush's memory
// stays what it was when every part was.
const smallPart = 1 << 15

// writeHead writes h (the flushing head) as one part per tenant and day,
// then commits them: the manifest names them and says the WAL starts at
// walFrom, the parts become readable, and h is no longer. Parts are
// written by up to flushWorkers goroutines (the parts of up to smallPart
// rows; larger ones first, one at a time). Close stops a flush between
// parts (the WAL still has its rows, and the next Open removes what it
// wrote).
func (s *Store) writeHead(h *head, walFrom uint64) error {
	v := h.view()
	type job struct {
		tenant string
		day    int64
		id     uint64
		rows   int
		lp     *livePart
		err    error
	}
	var jobs []*job
	tenants := make([]string, 0, len(v.tenants))
	for t := range v.tenants {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	for _, t := range tenants {
		streams := v.tenants[t] // sorted by key, refs by time
		// The days this tenant's rows fall on.
		var days []int64
		for _, sv := range streams {
			for i := 0; i < len(sv.refs); {
				start, end := dayRange(sv.refs[i].time)
				days = append(days, start)
				i += countBefore(sv.refs[i:], end)
			}
		}
		slices.Sort(days)
		days = slices.Compact(days)
		for _, day := range days {
			j := &job{tenant: t, day: day, id: s.nextID()}
			for _, sv := range streams {
				j.rows += countBefore(sv.refs, day+int64(24*time.Hour)) - countBefore(sv.refs, day)
			}
			jobs = append(jobs, j)
		}
	}
	var failed atomic.Bool
	run := func(j *job) {
		if j.err = s.ctx.Err(); j.err == nil {
			j.lp, j.err = s.writeDay(v, j.tenant, v.tenants[j.tenant], j.day, j.id)
		}
		if j.err != nil {
			failed.Store(true)
		}
	}
	var small []*job
	for _, j := range jobs {
		if j.rows > smallPart {
			if !failed.Load() {
				run(j)
			}
		} else {
			small = append(small, j)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(flushWorkers, len(small)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(small) || failed.Load() {
					return
				}
				run(small[i])
			}
		}()
	}
	wg.Wait()
	written := make([]*livePart, 0, len(jobs))
	var err error
	for _, j := range jobs {
		if j.lp != nil {
			written = append(written, j.lp)
		}
		if err == nil {
			err = j.err
		}
	}
	if err != nil {
		for _, lp := range written {
			lp.release()
			_ = s.fs.Remove(path.Join(s.opts.Dir, lp.info.path()))
		}
		return fmt.Errorf("flush: %w", err)
	}
	return s.commit(written, nil, walFrom, h)
}

// countBefore returns how many refs (sorted by time) are before end.
func countBefore(refs []headRef, end int64) int {
	n, _ := slices.BinarySearchFunc(refs, end, func(r headRef, t int64) int { return cmp.Compare(r.time, t) })
	return n
}

// prefetchAhead is how many rows ahead of the one being written the flush
// asks for the next rows' bytes: rows are visited stream by stream, and
// without it most of a flush waits for memory.
const prefetchAhead = 6

// writeDay writes the rows of one tenant and day to a new part, id.
func (s *Store) writeDay(v *headView, tenant string, streams []streamView, day int64, id uint64) (*livePart, error) {
	info := partInfo{ID: id, Tenant: tenant, Day: dayOf(day), Level: 0}
	info.Seq = info.ID
	end := day + int64(24*time.Hour)
	err := s.writePart(&info, func(w *part.Writer) error {
		var r rows.Row
		var fields []rows.Field
		for _, sv := range streams {
			lo := countBefore(sv.refs, day)
			hi := countBefore(sv.refs, end)
			if lo == hi {
				continue
			}
			if err := w.StartStream(sv.labels); err != nil {
				return err
			}
			refs := sv.refs[lo:hi]
			for j, ref := range refs {
				if j+prefetchAhead < len(refs) {
					ahead := refs[j+prefetchAhead]
					v.blocks[ahead.blk].Prefetch(int(ahead.row))
				}
				blk := v.blocks[ref.blk]
				fields = blk.Row(int(ref.row), &r, fields)
				if err := w.Add(&r, blk.Names); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	info.Written = info.Size
	lp, err := s.openPart(info)
	if err != nil {
		_ = s.fs.Remove(path.Join(s.opts.Dir, info.path()))
		return nil, fmt.Errorf("reopen written part: %w", err)
	}
	s.mu.Lock()
	s.stats.Flushes++
	s.stats.FlushedBytes += info.Size
	s.mu.Unlock()
	return lp, nil
}

func (s *Store) nextID() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.man.NextID
	s.man.NextID++
	return id
}

// writePart creates the part file of info, lets fill add its rows, and
// finishes it durably: written under a temporary name, synced, renamed,
// and its directory synced. It fills in info's totals.
func (s *Store) writePart(info *partInfo, fill func(*part.Writer) error) error {
	// Flushed parts are merged before long: compress them for speed; in a
	// bulk load, whose compaction rewrites them, leave their filters out.
	opts := part.WriterOptions{FastCompression: info.Level == 0, NoFilters: info.Level == 0 && s.opts.DeferMerges}
	final := path.Join(s.opts.Dir, info.path())
	dir := path.Dir(final)
	if err := s.mkdirs(path.Dir(info.path())); err != nil {
		return err
	}
	tmp := final + ".tmp"
	w, err := part.Create(s.fs, tmp, opts)
	if err != nil {
		return err
	}
	if err := fill(w); err != nil {
		w.Abort()
		return err
	}
	meta, err := w.Finish()
	if err != nil {
		w.Abort()
		return err
	}
	if err := s.fs.Rename(tmp, final); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("rename part: %w", err)
	}
	if err := s.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("sync part directory: %w", err)
	}
	info.Rows, info.MinTime, info.MaxTime = meta.Rows, meta.MinTime, meta.MaxTime
	info.LineBytes, info.Size = meta.LineBytes, meta.Size
	return nil
}

// mkdirs creates the directory rel (under the data directory) and its
// parents, and makes their entries durable: a synced file in a directory
// whose own entry was never synced is lost on a crash.
func (s *Store) mkdirs(rel string) error {
	dir := path.Join(s.opts.Dir, rel)
	if s.durableDir(dir) {
		return nil
	}
	// Sync the chain even when it exists: a process that died after
	// creating it may never have synced it. Once synced, it is durable
	// for good (directories are never removed): later flushes skip it.
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	var synced []string
	for d := dir; d != s.opts.Dir && d != "." && d != "/"; d = path.Dir(d) {
		if s.durableDir(d) {
			break // and so are its parents
		}
		if err := s.fs.SyncDir(path.Dir(d)); err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
		synced = append(synced, d)
	}
	s.dirMu.Lock()
	if s.dirs == nil {
		s.dirs = map[string]bool{}
	}
	for _, d := range synced {
		s.dirs[d] = true
	}
	s.dirMu.Unlock()
	return nil
}

// durableDir says whether dir's entry (and its parents') is known to be
// durable.
func (s *Store) durableDir(dir string) bool {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	return s.dirs[dir]
}

// commit makes added parts live and removed ones dead in one manifest
// update; with flushed set it also moves the WAL start to walFrom and
// retires the flushing head, in the same step, so no snapshot sees a row
// twice or not at all.
func (s *Store) commit(added []*livePart, removed []uint64, walFrom uint64, flushed *head) error {
	s.mu.Lock()
	for _, id := range removed {
		if !slices.ContainsFunc(s.man.Parts, func(p partInfo) bool { return p.ID == id }) {
			s.mu.Unlock()
			for _, lp := range added {
				lp.release()
			}
			return fmt.Errorf("commit: part %d is no longer live", id) // a bug: two merges of one part
		}
	}
	next := *s.man
	next.Parts = slices.DeleteFunc(slices.Clone(s.man.Parts), func(p partInfo) bool { return slices.Contains(removed, p.ID) })
	for _, lp := range added {
		next.Parts = append(next.Parts, lp.info)
	}
	if flushed != nil {
		next.WALFrom = walFrom
	}
	if err := next.save(s.fs, s.opts.Dir); err != nil {
		s.mu.Unlock()
		// The new manifest may have reached the disk (a rename done, its
		// directory's sync failed): keep the added parts' files, which
		// it may name. Unnamed, Open removes them as leftovers.
		for _, lp := range added {
			lp.onFree = func(p *livePart) { _ = p.rd.Close() }
			lp.release()
		}
		return err
	}
	s.man = &next
	var dropped []*livePart
	s.parts = slices.DeleteFunc(s.parts, func(p *livePart) bool {
		if slices.Contains(removed, p.info.ID) {
			dropped = append(dropped, p)
			return true
		}
		return false
	})
	s.parts = append(s.parts, added...)
	slices.SortFunc(s.parts, func(a, b *livePart) int { return cmp.Compare(a.info.Seq, b.info.Seq) })
	if flushed != nil && s.flushing == flushed {
		s.flushing = nil
		s.room.Broadcast()
	}
	s.mu.Unlock()
	// The files go once no snapshot has them.
	for _, p := range dropped {
		p.release()
	}
	return nil
}
