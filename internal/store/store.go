package store

// Lock order. A goroutine holding one of these takes only locks below it:
//
//	flushMu   serializes flushes (the cut and the writing of parts)
//	mergeMu   serializes merges (never held with flushMu)
//	cut       held by Pending.Write across choosing the head and queueing
//	          the batch's frame in the WAL, and by the cut across the
//	          WAL's rotation and the head swap (see its INVARIANT)
//	mu        the store's state: heads, parts, manifest, counters (room
//	          waits on it)
//	Pending.mu  serializes a batch's settle
//	head.mu, head.flightMu, dirMu, Snapshot.dmgMu, the WAL's locks:
//	          leaves
//
// No lock is held when a call returns to its caller, and none while a
// goroutine waits for a caller to act (a flush settles the batches in
// flight itself rather than wait for their Wait), so a goroutine may Write
// several batches before it waits for them.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
	"github.com/sluicelog/sluice/internal/wal"
)

// Options configure a Store.
type Options struct {
	FS  vfs.FS // nil: vfs.OS
	Dir string
	// Sync is the WAL's policy; the zero value syncs before every
	// acknowledgement.
	Sync wal.SyncPolicy
	// WALBlockingSync is the WAL's wal.Options.BlockingSync.
	WALBlockingSync bool
	// HeadBytes is the head size (encoded bytes) that starts a flush.
	HeadBytes int64
	// MaxHeadBytes bounds the head filling and the one being flushed
	// together: past it, Append waits for the flush. 0 means twice
	// HeadBytes. A larger budget lets a burst be stored at the speed of
	// the WAL rather than of the flush, for as much memory.
	MaxHeadBytes int64
	// MergeFactor is how many parts of a tenant, day and level are merged
	// into one of the next level.
	MergeFactor int
	// Retention drops parts whose newest row is older than this; 0 keeps
	// everything.
	Retention time.Duration
	// MaxTenantBytes drops a tenant's oldest parts while its parts take
	// more than this many bytes; 0 means no limit.
	MaxTenantBytes int64
	// DeferMerges leaves merging to Compact: a bulk load that compacts at
	// its end would otherwise rewrite its rows once more per level.
	DeferMerges bool
	// OnWALSync, if set, is told the duration and bytes of each WAL
	// fdatasync (for a latency histogram); it must not block.
	OnWALSync func(d time.Duration, bytes int)
	// BlockCacheBytes is the memory the block cache (part.BlockCache:
	// the parsed headers, row templates and times of the blocks queries
	// read) may hold; 0 means DefaultBlockCacheBytes, below 0 none.
	BlockCacheBytes int64
	// WarmBlockCache fills up to half of the block cache after Open, in
	// the background, with the blocks of the newest parts first, so that
	// the first queries after a start run as warm ones (a server's; a
	// one-shot command has no use for it).
	WarmBlockCache bool
	// WALSegmentSize: see wal.Options.SegmentSize.
	WALSegmentSize int64
	// WALHold, if set, returns the lowest WAL segment another reader
	// still needs (the sinks' cursors): segments from it on are kept even
	// when flushed. It is asked before every removal of WAL segments, at
	// Open too, and must not block.
	WALHold func() uint64
	// ReadOnly opens the directory without changing a byte of it: the
	// WAL is replayed into memory (damage in it is found and skipped, not
	// repaired), damaged parts are left where they are and skipped,
	// leftovers are left, nothing is flushed, merged or dropped, and
	// writes fail with ErrReadOnly. The directory must exist. LOCK is
	// taken if it exists (a directory no store has opened has none).
	ReadOnly bool
	Logger   *slog.Logger
	// Now is the clock for retention and for the pause in writes that
	// starts a deferred flush; nil means time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultHeadBytes   = 64 << 20
	DefaultMergeFactor = 4
	// DefaultBlockCacheBytes holds what queries read again of about 400
	// blocks of JSON logs with a few hundred templates each (some 300 KB
	// each): a few million lines.
	DefaultBlockCacheBytes = 128 << 20
)

// ErrLocked is returned by Open when another process uses the directory.
var ErrLocked = errors.New("data directory is in use by another process")

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("store is closed")

// ErrReadOnly is returned by writes to a store opened ReadOnly.
var ErrReadOnly = errors.New("store is open read-only")

// Store is the storage engine of one data directory.
//
// Concurrency: every method is safe for concurrent use.
type Store struct {
	opts Options
	fs   vfs.FS
	lock io.Closer
	wal  *wal.Log
	log  *slog.Logger
	// blocks caches what every part's queries read again of its blocks.
	blocks *part.BlockCache

	// cut is held by Pending.Write across choosing the head and queueing
	// its frame in the WAL, and by the cut across the WAL's rotation and
	// the head swap.
	//
	// INVARIANT: a head holds exactly the records of the WAL frames queued
	// while it was s.head, and those are exactly the frames of the WAL
	// segments from the previous cut's rotation up to (not including) the
	// segment its own cut's Rotate returned, which the flush passes as
	// walFrom. The WAL writes frames in the order they were queued, a
	// rotation included, so a frame queued before the rotation (under
	// cut) lands in an earlier segment and one queued after it in a later
	// one. A batch counts in its head's in-flight list from its Enqueue
	// until its frame is written and its rows inserted (or it failed); a
	// flush settles every batch still in flight in the head it cut before
	// it writes that head, so no batch is lost or split between heads,
	// and no caller's Wait is needed for a cut to finish.
	cut sync.Mutex

	flushMu sync.Mutex // serializes flushes
	mergeMu sync.Mutex // serializes merges

	mu          sync.Mutex
	room        *sync.Cond // signalled when a flush ends
	flushingSeg uint64     // the WAL segment after the flushing head's
	head        *head      // swapped under both cut and mu: either lock reads it
	flushing    *head      // the head being written to parts, still readable
	parts       []*livePart
	man         *manifest
	bgErr       error // the last flush's failure; nil after a success
	// flushFailing is bgErr != nil, read without the lock (WriteError).
	flushFailing atomic.Bool
	flushTries   int // background flush attempts, so a waiter can wait for the next
	closed       bool
	stats        Stats
	// badParts are the parts known to be unreadable (set aside at Open,
	// now or earlier, or skipped by a read-only Open).
	badParts []Damage
	// quarantined counts the blocks found damaged since Open.
	quarantined atomic.Int64
	// repairs says what Open changed in the directory.
	repairs []string
	walRep  wal.RecoveryReport
	// dirs are the directories under Dir whose entries mkdirs has made
	// durable.
	dirMu sync.Mutex
	dirs  map[string]bool

	encoders sync.Pool     // *preparer
	kick     chan struct{} // wakes the flusher
	// lastWrite is when a batch last went to the WAL (Unix ns): while
	// writes keep coming and the heads are under half their budget, the
	// flusher leaves the cores to them.
	lastWrite atomic.Int64
	fullSince int64         // deferFlush: when the head waiting was found full (Unix ns; 0: none waits)
	maintain  chan struct{} // wakes the maintainer
	stop      chan struct{}
	warmed    chan struct{}   // closed when warm is done
	ctx       context.Context // cancelled by Close, to stop a merge
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// Stats are the store's counters.
type Stats struct {
	Flushes, Merges      int64
	FlushedBytes         int64 // part bytes written by flushes
	MergedBytes          int64 // part bytes written by merges
	DroppedParts         int64 // by retention
	RecoveredRecords     int64 // WAL records replayed at Open
	RecoveryTime         time.Duration
	CorruptWAL, BadParts int
	// TornWAL is where the WAL ends in an incomplete frame that a
	// read-only Open found and left ("" when none, or when it was cut
	// off).
	TornWAL string
	// QuarantinedBlocks counts the part blocks that reads found damaged
	// since Open; BadBlocks is how many of them are in live parts.
	QuarantinedBlocks     int64
	BadBlocks             int
	HeadBytes, HeadRows   int64
	FlushingBytes         int64 // of the head being flushed, if one is
	BlockCacheBytes       int64 // held by the block cache
	BlockCacheWaiting     int64 // evicted from it, freed once the reads under way leave
	BlockCacheResident    int64 // its memory that may be resident: held, waiting and free to reuse
	Parts                 int
	PartBytes, LineBytes  int64
	PartRows              int64
	WAL                   wal.Stats
	BackgroundError       string
	WriteAmplification    float64 // part bytes written / part bytes live
	FlushBytesBeforeMerge int64
}

// Open opens or creates the store in opts.Dir, taking its lock and
// recovering: parts the manifest does not name (leftovers of an
// interrupted flush or merge) are deleted, and the WAL is replayed into
// the head from where the parts end.
func Open(opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.HeadBytes <= 0 {
		opts.HeadBytes = DefaultHeadBytes
	}
	opts.MaxHeadBytes = max(opts.MaxHeadBytes, 2*opts.HeadBytes)
	if opts.MergeFactor < 2 {
		opts.MergeFactor = DefaultMergeFactor
	}
	if opts.BlockCacheBytes == 0 {
		opts.BlockCacheBytes = DefaultBlockCacheBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	fs, dir := opts.FS, opts.Dir
	lock, err := openLock(fs, dir, opts.ReadOnly)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	s := &Store{opts: opts, fs: fs, lock: lock, log: opts.Logger, head: newHead(),
		kick: make(chan struct{}, 1), maintain: make(chan struct{}, 1), stop: make(chan struct{})}
	s.room = sync.NewCond(&s.mu)
	if opts.BlockCacheBytes > 0 {
		s.blocks = part.NewBlockCache(opts.BlockCacheBytes)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.recover(); err != nil {
		s.cancel()
		if s.wal != nil {
			s.wal.Close()
		}
		s.closeParts()
		lock.Close()
		return nil, err
	}
	if opts.ReadOnly {
		return s, nil
	}
	s.wg.Add(2)
	go s.flusher()
	go s.maintainer()
	s.warmed = make(chan struct{})
	if opts.WarmBlockCache && s.blocks != nil {
		s.wg.Add(1)
		go s.warm()
	} else {
		close(s.warmed)
	}
	if b, _ := s.head.size(); b >= s.opts.HeadBytes {
		s.signal() // a replay that could not flush (a full disk) left a full head
	}
	return s, nil
}

// openLock takes the directory's LOCK, creating the directory (and
// LOCK) unless readOnly; read-only, a directory without LOCK (which no
// store has opened) is read without a lock.
func openLock(fs vfs.FS, dir string, readOnly bool) (io.Closer, error) {
	if readOnly {
		if _, err := fs.Stat(dir); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		if _, err := fs.Stat(path.Join(dir, "LOCK")); vfs.IsNotExist(err) {
			return io.NopCloser(nil), nil
		}
		return fs.Lock(path.Join(dir, "LOCK")) // flock changes no byte of it
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if err := fs.SyncDir(path.Dir(path.Clean(dir))); err != nil {
		return nil, fmt.Errorf("sync data directory's parent: %w", err)
	}
	return fs.Lock(path.Join(dir, "LOCK"))
}

func (s *Store) recover() error {
	start := time.Now()
	ro := s.opts.ReadOnly
	man, err := loadManifest(s.fs, s.opts.Dir)
	if err != nil {
		return err
	}
	s.man = man
	if !ro {
		if err := s.removeOrphans(); err != nil {
			return err
		}
	}
	aside, err := setAsideParts(s.fs, s.opts.Dir)
	if err != nil {
		return err
	}
	s.badParts = aside
	keep := man.Parts[:0:0]
	for _, info := range man.Parts {
		lp, err := s.openPart(info)
		if err != nil && !errors.Is(err, part.ErrCorrupt) {
			return err // a missing file, too many open files: not damage
		}
		if err != nil {
			// A damaged part is set aside, never deleted, and reported:
			// in the log, in Stats, and in the warnings of every query
			// that would have read it.
			p := path.Join(s.opts.Dir, info.path())
			d := partDamage(p, info, err)
			if !ro {
				s.log.Error("part unreadable; moved aside, its rows are not served", "part", p, "err", err)
				if rerr := s.fs.Rename(p, p+".corrupt"); rerr != nil {
					return fmt.Errorf("move aside unreadable part %s: %w (read: %v)", p, rerr, err)
				}
				d.Part = p + ".corrupt"
				s.repairs = append(s.repairs, fmt.Sprintf("set aside unreadable part %s as %s (%d rows): %v", p, d.Part, info.Rows, err))
			}
			s.badParts = append(s.badParts, d)
			continue
		}
		s.parts = append(s.parts, lp)
		keep = append(keep, info)
	}
	s.stats.BadParts = len(s.badParts)
	slices.SortFunc(s.parts, func(a, b *livePart) int { return cmp.Compare(a.info.Seq, b.info.Seq) })
	if len(keep) != len(man.Parts) && !ro {
		man.Parts = keep
		if err := man.save(s.fs, s.opts.Dir); err != nil {
			return err
		}
	}
	if ro {
		return s.replayReadOnly(start)
	}

	// Replay. A head that outgrows its limit is flushed at a segment
	// boundary, so replay memory stays bounded.
	var replayErr error
	var lastSeg uint64
	replayNoFlush := false
	replay := func(pos wal.Pos, payload []byte) error {
		if pos.Segment != lastSeg {
			if b, _ := s.head.size(); b >= s.opts.HeadBytes && !replayNoFlush {
				s.flushing, s.head = s.head, newHead()
				_, n := s.flushing.size()
				s.repairs = append(s.repairs, fmt.Sprintf("flushed %d replayed rows into parts", n))
				if err := s.writeHead(s.flushing, pos.Segment); err != nil {
					// A full disk must not keep the store from opening (and
					// its data from being read): keep the rest of the WAL in
					// memory; the flusher retries once Open is done.
					s.log.Warn("flush during WAL replay failed; replaying into memory", "err", err)
					s.head, s.flushing = s.flushing, nil
					replayNoFlush = true
				}
			}
			lastSeg = pos.Segment
		}
		if err := s.replayRecord(pos, payload); err != nil {
			replayErr = err
		}
		return nil
	}
	log, rep, err := wal.Open(s.walOptions(), man.WALFrom, replay)
	if err != nil {
		return fmt.Errorf("open WAL: %w", err)
	}
	s.wal = log
	s.walRep = rep
	s.stats.CorruptWAL = len(rep.Corrupt)
	if replayErr != nil {
		s.stats.CorruptWAL++
	}
	if rep.TornTail != nil {
		s.repairs = append(s.repairs, fmt.Sprintf("cut the WAL's torn tail at %s", rep.TornTail))
	}
	for _, c := range rep.Corrupt {
		s.repairs = append(s.repairs, fmt.Sprintf("rewrote WAL segment %d without its damaged bytes (%v); the original is kept as .corrupt", c.Segment, c))
	}
	if err := log.RemoveBefore(s.walRemovable(s.man.WALFrom)); err != nil {
		return fmt.Errorf("remove flushed WAL segments: %w", err)
	}
	s.stats.RecoveryTime = time.Since(start)
	return nil
}

func (s *Store) walOptions() wal.Options {
	return wal.Options{FS: s.fs, Dir: path.Join(s.opts.Dir, "wal"), Sync: s.opts.Sync, BlockingSync: s.opts.WALBlockingSync,
		SegmentSize: s.opts.WALSegmentSize, Logger: s.log, OnSync: s.opts.OnWALSync}
}

// replayRecord decodes one WAL record into the head. A record that does
// not decode is reported and skipped: the WAL checked its CRC, so it is
// a bug or an incompatible writer.
func (s *Store) replayRecord(pos wal.Pos, payload []byte) error {
	blk, err := rows.Decode(slices.Clone(payload))
	if err == nil {
		err = checkTenant(blk.Tenant)
	}
	if err != nil {
		s.log.Error("WAL record undecodable; skipped", "pos", pos.String(), "err", err)
		return err
	}
	s.head.insert(blk, walOrder(pos))
	s.stats.RecoveredRecords += int64(len(blk.Rows))
	return nil
}

// replayReadOnly replays the WAL into the head, all in memory, changing
// nothing: damage is skipped and reported, not repaired.
func (s *Store) replayReadOnly(start time.Time) error {
	var replayErr error
	rep, err := wal.Replay(s.walOptions(), s.man.WALFrom, func(pos wal.Pos, payload []byte) error {
		if err := s.replayRecord(pos, payload); err != nil {
			replayErr = err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read WAL: %w", err)
	}
	s.walRep = rep
	s.stats.CorruptWAL = len(rep.Corrupt)
	if replayErr != nil {
		s.stats.CorruptWAL++
	}
	if rep.TornTail != nil {
		s.stats.TornWAL = rep.TornTail.String()
	}
	s.stats.RecoveryTime = time.Since(start)
	return nil
}

// Repairs says what Open changed in the directory to recover it: a torn
// WAL tail cut, damaged WAL segments rewritten, unreadable parts set
// aside, leftovers of interrupted work deleted, replayed rows flushed.
// A read-only store changes nothing: none.
func (s *Store) Repairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.repairs)
}

// WALReport is what the WAL's replay at Open found (and, unless the
// store is read-only, repaired).
func (s *Store) WALReport() wal.RecoveryReport { return s.walRep }

// removeOrphans deletes part files and temporary files that the manifest
// does not name.
func (s *Store) removeOrphans() error {
	live := map[string]bool{}
	for _, p := range s.man.Parts {
		live[p.path()] = true
	}
	_ = s.fs.Remove(path.Join(s.opts.Dir, manifestName+".tmp"))
	root := path.Join(s.opts.Dir, "parts")
	tenants, err := s.fs.List(root)
	if vfs.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list parts: %w", err)
	}
	for _, t := range tenants {
		days, err := s.fs.List(path.Join(root, t))
		if err != nil {
			continue // not a directory
		}
		for _, d := range days {
			files, err := s.fs.List(path.Join(root, t, d))
			if err != nil {
				continue
			}
			for _, f := range files {
				rel := path.Join("parts", t, d, f)
				if live[rel] || strings.HasSuffix(f, ".corrupt") {
					continue
				}
				if err := s.fs.Remove(path.Join(s.opts.Dir, rel)); err != nil {
					return fmt.Errorf("remove leftover %s: %w", rel, err)
				}
				s.repairs = append(s.repairs, "deleted "+rel+", a leftover of interrupted work that the MANIFEST does not name")
			}
		}
	}
	return nil
}

func (s *Store) openPart(info partInfo) (*livePart, error) {
	rd, err := part.Open(s.fs, path.Join(s.opts.Dir, info.path()))
	if err != nil {
		return nil, err
	}
	if s.blocks != nil {
		rd.UseBlockCache(s.blocks)
	}
	rd.OnDamage = s.onBlockDamage
	lp := &livePart{info: info, rd: rd, streams: make(map[string]uint32, len(rd.Streams)), onFree: s.freePart}
	for i, ls := range rd.Streams {
		lp.streams[ls.String()] = uint32(i)
	}
	lp.refs.Store(1)
	return lp, nil
}

// freePart closes a part no one uses; if it is no longer in the manifest,
// it deletes the file.
func (s *Store) freePart(p *livePart) {
	_ = p.rd.Close()
	s.mu.Lock()
	live := slices.ContainsFunc(s.man.Parts, func(i partInfo) bool { return i.ID == p.info.ID })
	s.mu.Unlock()
	if !live {
		if err := s.fs.Remove(path.Join(s.opts.Dir, p.info.path())); err != nil && !vfs.IsNotExist(err) {
			s.log.Warn("remove dropped part", "part", p.info.path(), "err", err)
		}
	}
}

// Append makes the kept records of b durable for tenant and visible to
// later snapshots (b.Tenant, when set, must be tenant: see Prepare). It returns nil only once they are in the WAL as the sync
// policy says. Rejected lines (b.Errors) are not stored. While the heads
// are full it waits for room, or until ctx is done (then it returns
// ctx's error and stores nothing).
func (s *Store) Append(ctx context.Context, tenant string, b *record.Batch) error {
	p, err := s.Prepare(tenant, b)
	if err != nil {
		return err
	}
	p.Write(ctx)
	return p.Wait()
}

// Pending is a batch on its way into the store, in two steps: Write gives
// it its place in the WAL (batches written one after another by one
// goroutine are stored in that order, which is the order of rows with
// equal times), Wait waits until it is durable and visible. A goroutine
// may Write several batches before it waits for them, in any order.
type Pending struct {
	s *Store
	// blk is the batch's block until it is settled (the head has it
	// then: a Pending kept by its caller, or by its slab's neighbours,
	// does not keep the block from a flush); empty says there was none.
	blk   *rows.Block
	empty bool
	err   error // Write's; when set, the batch was not queued

	h  *head // the head it goes into, once queued
	wp wal.Pending
	// prev and next link it in h's in-flight list (under h.flightMu).
	prev, next *Pending

	mu      sync.Mutex // serializes settle
	settled bool
	werr    error // the WAL's, once settled
}

// Prepare encodes the kept records of b (see record.Batch.Drop) for
// tenant. A batch that names its tenant (b.Tenant) must name this one;
// one that does not is stored for tenant. It may run on many goroutines
// at once; b is not needed once it returns.
func (s *Store) Prepare(tenant string, b *record.Batch) (*Pending, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	if s.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if b.Tenant != "" && b.Tenant != tenant {
		return nil, fmt.Errorf("store: batch of tenant %q prepared for tenant %q", b.Tenant, tenant)
	}
	pr, _ := s.encoders.Get().(*preparer)
	if pr == nil {
		pr = new(preparer)
	}
	p := pr.pending()
	p.s = s
	if b.NumKept() > 0 {
		p.blk = pr.enc.Block(tenant, b)
	} else {
		p.empty = true
	}
	s.encoders.Put(pr)
	return p, nil
}

// preparer is what Prepare takes from Store.encoders: an Encoder, and
// what is left of a slab of Pendings.
type preparer struct {
	enc  rows.Encoder
	slab []Pending
}

// pendingSlab is how many Pendings a preparer carves from one
// allocation.
const pendingSlab = 32

// pending returns a zero Pending carved from the slab: one allocation per
// pendingSlab batches instead of one per batch (a third of a one-line
// push's).
//
// Carved, not pooled: a Pending is never handed out twice, so nothing
// has to agree on its last use. A pool would need that agreement, and the
// settle race forbids taking the end of Wait for it: settleInFlight (a
// flush cutting the head) reads p from the head's in-flight list under
// flightMu, lets go of flightMu, then calls p.settle. Between the two,
// p's own Wait may settle it (taking it off the list) and return; a
// pooled p would then be reset and reused for the next batch (settled
// false, another wal.Pending, maybe another head) while the flush is
// about to lock p.mu: the flush would settle that other batch, into its
// head, from the flusher, racing with the reset. Making pooling safe
// takes a reference held under flightMu across the flush's settle, with
// the owner freeing p only once none is held; carving needs nothing, the
// garbage collector freeing a slab once none of its Pendings is
// reachable (at most pendingSlab-1 of them, about 4 KiB, held beyond
// those in use).
func (pr *preparer) pending() *Pending {
	if len(pr.slab) == 0 {
		pr.slab = make([]Pending, pendingSlab)
	}
	p := &pr.slab[0]
	pr.slab = pr.slab[1:]
	return p
}

// Write queues the batch for the WAL, after waiting, if the heads are
// full, for a flush to make room, or until ctx is done: then the batch is
// not stored and Wait returns ctx's error. Write holds no lock when it
// returns.
// REQUIRES: Write is called once; Wait is called after it.
func (p *Pending) Write(ctx context.Context) {
	if p.empty {
		return
	}
	s := p.s
	if p.err = s.waitForRoom(ctx); p.err != nil {
		p.blk = nil // not stored
		return
	}
	s.lastWrite.Store(s.opts.Now().UnixNano())
	// See the INVARIANT on Store.cut: the head is chosen and the frame
	// queued as one step with respect to a cut.
	s.cut.Lock()
	h := s.head // swapped under cut (and mu)
	p.h = h
	h.addInFlight(p)
	p.wp = s.wal.Enqueue(p.blk.Data)
	s.cut.Unlock()
}

// Wait returns nil once the batch is durable and visible, or why not.
func (p *Pending) Wait() error {
	if p.empty || p.err != nil {
		return p.err
	}
	if err := p.settle(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if b, _ := p.h.size(); b >= p.s.opts.HeadBytes {
		p.s.signal()
	}
	return nil
}

// settle waits for the batch's frame to be written and inserts its rows
// into its head, once: the batch's Wait or the flush that cut its head,
// whichever comes first, does it. It returns the WAL's error.
func (p *Pending) settle() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settled {
		return p.werr
	}
	pos, err := p.wp.Wait()
	if err == nil {
		p.h.insert(p.blk, walOrder(pos))
	}
	p.blk = nil
	p.h.removeInFlight(p)
	p.settled, p.werr = true, err
	return err
}

// walOrder orders blocks as their frames are in the WAL.
func walOrder(p wal.Pos) uint64 { return p.Segment<<40 | uint64(p.Offset) }

// waitForRoom blocks while the heads (the one filling and the one being
// flushed) hold MaxHeadBytes. While flushing fails (a full disk, say) it
// waits for an attempt begun after it asked and, if that fails too,
// returns its error rather than let memory grow or block the caller
// forever. It returns ctx's error if ctx is done while it waits.
func (s *Store) waitForRoom(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var stop func() bool // unregisters the wake-up on ctx, once set
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	// Attempts that ended since this call began: the first may have been
	// under way already (begun before the disk had room again), so an
	// error needs a second attempt, one begun after our signal, to fail
	// too.
	attempts := 0
	for {
		if s.closed {
			return ErrClosed
		}
		// A full head starts a flush; the heads past their budget wait
		// for it (or, if none is under way, for the flusher to cut).
		b, _ := s.head.size()
		if b < s.opts.HeadBytes {
			return nil
		}
		var f int64
		if s.flushing != nil {
			f, _ = s.flushing.size()
		}
		if b+f < s.opts.MaxHeadBytes {
			s.signal()
			return nil
		}
		if s.bgErr != nil && attempts >= 2 {
			return fmt.Errorf("store: the head is full and cannot be flushed: %w", s.bgErr)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store: wait for room: %w", err)
		}
		if stop == nil && ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				s.mu.Lock()
				s.room.Broadcast()
				s.mu.Unlock()
			})
		}
		// Wait for the flusher's next attempt, or for the heads to
		// change under us: a Flush by another caller (sluice ingest's
		// last one, a test) cuts and retires heads without being one of
		// the flusher's attempts, and the flusher, kicked while it was
		// busy, may then find nothing to flush and attempt nothing.
		tries, h, fl := s.flushTries, s.head, s.flushing
		s.signal()
		for s.flushTries == tries && s.head == h && s.flushing == fl && !s.closed && ctx.Err() == nil {
			s.room.Wait()
		}
		attempts += s.flushTries - tries
	}
}

func (s *Store) signal() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// warm reads the blocks of the parts live at Open into the block cache,
// the newest part first: their headers, templates and times until the
// cache holds a quarter of its budget, then their columns decompressed
// until it holds half (the rest is the queries'), or the store closes.
// One goroutine, so that queries arriving meanwhile keep a core. A
// damaged block is quarantined and reported as a query's read would
// (OnDamage); warming goes on.
//
// With the columns, the first query after a restart runs as a warm one:
// on the mixed 2M-line store, `sum by (kind) (count_over_time({kind=~".+"}
// |= "/login" [10s]))` took 377-497 ms first and 78-100 ms after; warmed,
// 91-96 ms first, for 0.7 s of CPU at the start.
func (s *Store) warm() {
	defer s.wg.Done()
	defer close(s.warmed)
	sn := s.Snapshot()
	defer sn.Release()
	var blk part.Block
	for _, pass := range []struct {
		columns bool
		upTo    int64
	}{{false, s.blocks.Budget() / 4}, {true, s.blocks.Budget() / 2}} {
	parts:
		for i := len(sn.parts) - 1; i >= 0; i-- { // parts are by id: the newest last
			rd := sn.parts[i].rd
			for b := range rd.Blocks {
				if s.ctx.Err() != nil {
					return
				}
				if s.blocks.Used() >= pass.upTo {
					break parts
				}
				_ = rd.Warm(b, &blk, pass.columns) // damage is quarantined, and reported by the reader
			}
		}
	}
}

// Flush writes the head to parts now and waits until it is done.
func (s *Store) Flush() error {
	return s.flush()
}

// flusher flushes the head whenever it is full (or a failed flush waits
// for a retry), until Close. It runs apart from merges, so a long merge
// never lets the head grow.
func (s *Store) flusher() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		pause := 100 * time.Millisecond
		for {
			s.mu.Lock()
			h := s.head // swapped by flush under mu (and cut)
			s.mu.Unlock()
			b, _ := h.size()
			if b < s.opts.HeadBytes && !s.hasFlushing() {
				break
			}
			if wait := s.deferFlush(b); wait > 0 {
				select {
				case <-s.stop:
					return
				case <-time.After(wait):
				}
				continue
			}
			err := s.flush()
			s.setFlushError(err)
			if err != nil {
				// Don't spin on a full disk: retry after a pause that
				// grows to a few seconds, or at once when an Append
				// waits for a retry.
				select {
				case <-s.stop:
					return
				case <-s.kick:
				case <-time.After(pause):
				}
				pause = min(2*pause, 5*time.Second)
			}
		}
		s.kickMaintainer()
	}
}

// A full head under half the budget waits for writes to pause for
// flushIdle before it is flushed, but no longer than maxFlushDelay: a
// burst has the cores, and a steady stream does not keep its head (and
// its memory) growing.
const (
	flushIdle     = 100 * time.Millisecond
	maxFlushDelay = 3 * time.Second
)

// deferFlush returns how long to wait before flushing a head of b bytes:
// while batches keep coming (a burst) and the heads hold less than half
// of MaxHeadBytes, the flush waits for a pause, up to maxFlushDelay after
// the head was first found full, so the burst has the cores; past half,
// after a pause or after that delay, it runs at once (0). With the default
// budget of two heads it never waits. Only the flusher calls it.
func (s *Store) deferFlush(b int64) time.Duration {
	now := s.opts.Now().UnixNano()
	if s.hasFlushing() || b >= s.opts.MaxHeadBytes/2 {
		s.fullSince = 0
		return 0
	}
	if s.fullSince == 0 {
		s.fullSince = now
	}
	idle := time.Duration(now - s.lastWrite.Load())
	waited := time.Duration(now - s.fullSince)
	if idle >= flushIdle || waited >= maxFlushDelay {
		s.fullSince = 0
		return 0
	}
	return min(flushIdle-idle, maxFlushDelay-waited)
}

// maintainer merges parts and applies retention after flushes and every
// minute, until Close.
func (s *Store) maintainer() {
	defer s.wg.Done()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.maintain:
		case <-tick.C:
		}
		if !s.opts.DeferMerges {
			s.logBackground(s.mergeAll(s.ctx))
		}
		s.logBackground(s.applyRetention())
	}
}

func (s *Store) kickMaintainer() {
	select {
	case s.maintain <- struct{}{}:
	default:
	}
}

// setFlushError records the outcome of a background flush: while
// flushing fails, Append refuses rather than let the head grow without
// bound.
func (s *Store) setFlushError(err error) {
	s.logBackground(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bgErr = err
	s.flushFailing.Store(err != nil)
	s.flushTries++
	s.room.Broadcast()
}

func (s *Store) logBackground(err error) {
	if err != nil && s.ctx.Err() == nil {
		s.log.Error("background work failed; will retry", "err", err)
		s.mu.Lock()
		s.stats.BackgroundError = err.Error()
		s.mu.Unlock()
	}
}

func (s *Store) hasFlushing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushing != nil
}

// flush cuts the head and writes it to parts. If writing fails, the cut
// head stays readable (and in the WAL) and the next flush retries it.
func (s *Store) flush() error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	h := s.flushing
	s.mu.Unlock()
	var seg uint64
	if h == nil {
		// The cut: see the INVARIANT on Store.cut.
		s.cut.Lock()
		if _, n := s.head.size(); n == 0 && !s.head.hasInFlight() {
			s.cut.Unlock()
			return nil
		}
		var err error
		seg, err = s.wal.Rotate()
		if err != nil {
			s.cut.Unlock()
			return fmt.Errorf("flush: rotate WAL: %w", err)
		}
		s.mu.Lock()
		h = s.head
		s.flushing, s.head = h, newHead()
		s.flushingSeg = seg
		s.mu.Unlock()
		s.cut.Unlock()
	} else {
		seg = s.flushingSeg
	}
	// No batch is queued to h any more; those queued before the cut are
	// in segments below seg: wait for them to be in h.
	h.settleInFlight()
	if err := s.writeHead(h, seg); err != nil {
		return err
	}
	if err := s.wal.RemoveBefore(s.walRemovable(seg)); err != nil {
		return fmt.Errorf("flush: remove WAL segments: %w", err)
	}
	return nil
}

// walRemovable returns the segment below which the WAL may be removed:
// seg, the flush point, unless a WALHold reader still needs less.
func (s *Store) walRemovable(seg uint64) uint64 {
	if s.opts.WALHold != nil {
		seg = min(seg, s.opts.WALHold())
	}
	return seg
}

// WAL returns the store's write-ahead log, for readers that follow it
// (sink cursors: wal.Log.Cursor). It is nil for a store opened ReadOnly.
// Callers must not append to it or remove segments from it.
func (s *Store) WAL() *wal.Log { return s.wal }

// Close flushes nothing (the WAL has everything), stops background work,
// and closes the WAL and parts. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.room.Broadcast()
	s.mu.Unlock()
	close(s.stop)
	s.cancel()
	s.wg.Wait()
	var err error
	if s.wal != nil {
		s.cut.Lock()
		err = s.wal.Close()
		s.cut.Unlock()
	}
	s.closeParts()
	if s.blocks != nil {
		s.blocks.Close() // its memory is freed as the last snapshots are released
	}
	if cerr := s.lock.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *Store) closeParts() {
	s.mu.Lock()
	parts := s.parts
	s.parts = nil
	s.mu.Unlock()
	for _, p := range parts {
		p.release()
	}
}

// Snapshot returns a consistent view of everything acknowledged so far.
func (s *Store) Snapshot() *Snapshot {
	// An acknowledged batch is in its head, and a head is in s.head or
	// s.flushing until commit has made its parts live, under mu.
	s.mu.Lock()
	sn := &Snapshot{parts: slices.Clone(s.parts), badParts: s.badParts}
	if s.flushing != nil {
		sn.heads = append(sn.heads, s.flushing.view())
	}
	sn.heads = append(sn.heads, s.head.view())
	for _, p := range sn.parts {
		p.acquire()
	}
	s.mu.Unlock()
	if s.blocks != nil {
		sn.cache, sn.epoch = s.blocks, s.blocks.Enter()
	}
	return sn
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	st := s.stats
	st.BadParts = len(s.badParts)
	for _, p := range s.parts {
		st.BadBlocks += p.rd.BadBlocks()
		st.Parts++
		st.PartBytes += p.info.Size
		st.LineBytes += p.info.LineBytes
		st.PartRows += p.info.Rows
	}
	if s.bgErr != nil {
		st.BackgroundError = s.bgErr.Error()
	}
	h, f := s.head, s.flushing
	s.mu.Unlock()
	st.HeadBytes, st.HeadRows = h.size()
	if f != nil {
		st.FlushingBytes, _ = f.size()
	}
	if s.blocks != nil {
		st.BlockCacheBytes = s.blocks.Used()
		st.BlockCacheWaiting, st.BlockCacheResident = s.blocks.Waiting(), s.blocks.Resident()
	}
	st.QuarantinedBlocks = s.quarantined.Load()
	if s.wal != nil {
		st.WAL = s.wal.Stats()
	}
	if st.PartBytes > 0 {
		st.WriteAmplification = float64(st.FlushedBytes+st.MergedBytes) / float64(st.PartBytes)
	}
	return st
}

// Compact flushes the head, then merges every tenant's and day's parts
// into one (up to maxMergeInputs at a time): what a bulk load does at its
// end, so its data is in its final, smallest form.
func (s *Store) Compact(ctx context.Context) error {
	if err := s.flush(); err != nil {
		return err
	}
	if err := s.mergeAll(ctx); err != nil {
		return err
	}
	s.mergeMu.Lock()
	defer s.mergeMu.Unlock()
	return s.mergeEach(ctx, s.pickMergeDay)
}

// PartStat describes one live part.
type PartStat struct {
	ID                    uint64
	Tenant, Day           string
	Level                 int
	Rows, LineBytes, Size int64
	MinTime, MaxTime      int64
	Streams               []string // the streams' labels, as String
	Blocks                int
}

// PartStats describes the live parts, ordered by tenant, day and id.
func (s *Store) PartStats() []PartStat {
	s.mu.Lock()
	parts := slices.Clone(s.parts)
	s.mu.Unlock()
	out := make([]PartStat, 0, len(parts))
	for _, p := range parts {
		ps := PartStat{ID: p.info.ID, Tenant: p.info.Tenant, Day: p.info.Day, Level: p.info.Level, Rows: p.info.Rows,
			LineBytes: p.info.LineBytes, Size: p.info.Size, MinTime: p.info.MinTime, MaxTime: p.info.MaxTime, Blocks: len(p.rd.Blocks)}
		for k := range p.streams {
			ps.Streams = append(ps.Streams, k)
		}
		out = append(out, ps)
	}
	slices.SortFunc(out, func(a, b PartStat) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Day, b.Day), cmp.Compare(a.ID, b.ID))
	})
	return out
}
