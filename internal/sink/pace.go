package sink

import (
	"context"
	"time"

	"github.com/sluicelog/sluice/internal/wal"
)

// Pacing (Config.Pace): a sink behind a burst of ingest takes its share of
// the cores whatever a record costs it, and on a small machine that share
// is ingest's loss. A paced sink works only Pace of its time while the WAL
// grows faster than the sink reads it, pausing after each batch, and
// catches up at full speed once ingest slows. The WAL is the queue: a pause
// delivers later, never less, and the budget and its policy still bound
// what the sink holds (pausing stops at half the budget).

// maxPause bounds one pause.
const maxPause = time.Second

// pacer is Config.Pace's state, owned by the goroutine that fills
// batches.
type pacer struct {
	s    *Sink
	prev int64 // the unread WAL bytes at the last look; -1 before the first
}

func (s *Sink) pacer() *pacer { return &pacer{s: s, prev: -1} }

// after is called once a batch was filled, from the WAL position after it
// (unread), its fill and the last delivery having taken work: it pauses
// as pauseFor says. It reports false when ctx ended during the pause.
func (p *pacer) after(ctx context.Context, l *wal.Log, unread wal.Pos, work time.Duration) bool {
	s := p.s
	if s.cfg.Pace <= 0 {
		return true
	}
	now, err := l.BytesSince(unread)
	if err != nil {
		p.prev = -1
		return true
	}
	d := pauseFor(s.cfg.Pace, work, p.prev, now, s.cfg.Budget)
	p.prev = now
	if d <= 0 {
		return true
	}
	s.m.paused.Add(d.Seconds())
	return s.wait(ctx, d)
}

// pauseFor returns how long a sink of pace share pauses after a batch
// whose fill and delivery took work, the WAL it has not read having gone
// from prev bytes (-1: unknown) to now since the batch before: (1-share)/
// share times work, at most maxPause, when the unread WAL grew (ingest
// appends faster than the sink reads) and stays under half the budget;
// otherwise 0, and the sink catches up at full speed.
func pauseFor(share float64, work time.Duration, prev, now, budget int64) time.Duration {
	if share <= 0 || share >= 1 || work <= 0 || prev < 0 || now <= prev || now >= budget/2 {
		return 0
	}
	return min(time.Duration(float64(work)*(1-share)/share), maxPause)
}
