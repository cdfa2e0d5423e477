package rules

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/vfs"
)

// Live is the running rules: the current Set behind one atomic pointer,
// swapped whole by Reload. Each Apply loads the pointer once, so a batch
// is evaluated under exactly one version.
//
// Concurrency: safe for concurrent use.
type Live struct {
	file    string
	metrics *Metrics
	log     *slog.Logger
	cur     atomic.Pointer[Set]
	mu      sync.Mutex // serializes reloads
	// sinks, if not nil, are the sinks routes may name (CompileRouted).
	sinks Sinks
	// watching, if set, is called once Watch watches (for tests).
	watching func()
}

// Open loads the rules file at path; a bad file is an error (the server
// does not start with rules it cannot run). m and log may be nil.
func Open(path string, m *Metrics, log *slog.Logger) (*Live, error) {
	return OpenRouted(path, m, log, nil)
}

// OpenRouted is Open with the configured sinks, which every version of
// the file is checked against (CompileRouted): a route to a sink that is
// not configured, or does not take routed lines, fails the load.
func OpenRouted(path string, m *Metrics, log *slog.Logger, sinks Sinks) (*Live, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Live{file: path, metrics: m, log: log, sinks: sinks}
	s, err := l.load()
	if err != nil {
		return nil, err
	}
	l.swap(s)
	return l, nil
}

func (l *Live) load() (*Set, error) {
	data, err := os.ReadFile(l.file)
	if err != nil {
		return nil, fmt.Errorf("read rules file: %w", err)
	}
	// What the running set compiled of the rules the file keeps is
	// kept: a reload compiles the rules that changed.
	return compileRouted(l.file, data, l.metrics, l.sinks, l.cur.Load())
}

func (l *Live) swap(s *Set) {
	l.cur.Store(s)
	if m := l.metrics; m != nil {
		m.loadedTime.Set(float64(s.Loaded.UnixNano()) / 1e9)
		m.active.Set(float64(s.Len()))
	}
}

// Current returns the running Set.
func (l *Live) Current() *Set { return l.cur.Load() }

// Apply applies the running Set to b (see Set.Apply): the flow's rule
// stage.
func (l *Live) Apply(b *record.Batch) {
	if s := l.cur.Load(); s != nil {
		s.Apply(b)
	}
}

// Reload reads, checks and compiles the file again and, if it loads and
// differs, swaps it in. A file that fails to load leaves the running set
// as it is; the error is logged, counted and returned.
func (l *Live) Reload() (changed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := l.load()
	if err != nil {
		l.count("error")
		l.log.Error("rules: reload failed; the running rules stay", "file", l.file, "err", err)
		return false, err
	}
	if old := l.cur.Load(); old != nil && old.Hash == s.Hash {
		l.count("unchanged")
		return false, nil
	}
	l.swap(s)
	l.count("ok")
	l.log.Info("rules: reloaded", "file", l.file, "rules", s.Len(), "sha256", s.Hash)
	return true, nil
}

// Put checks and compiles data as the rules file and, unless dryRun,
// writes it over the file (a new file renamed over it, so that a restart
// and the watcher read it whole) and swaps it in. A file that fails to
// load is an *Error and leaves the running set and the file as they are;
// a file of the running set's bytes changes nothing. It returns the set
// data compiled to and whether the running set changed.
func (l *Live) Put(data []byte, dryRun bool) (*Set, bool, error) {
	m := l.metrics
	if dryRun {
		m = nil // a dry run counts into nothing the running set exports
	}
	s, err := compileRouted(l.file, data, m, l.sinks, l.cur.Load())
	if err != nil {
		if !dryRun {
			l.count("error")
			l.log.Error("rules: PUT /api/v1/rules refused; the running rules stay", "file", l.file, "err", err)
		}
		return nil, false, err
	}
	if dryRun {
		return s, false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.cur.Load(); old != nil && old.Hash == s.Hash {
		l.count("unchanged")
		return old, false, nil
	}
	if err := replaceFile(l.file, data); err != nil {
		l.count("error")
		l.log.Error("rules: PUT: cannot write the rules file; the running rules stay", "file", l.file, "err", err)
		return nil, false, err
	}
	l.swap(s)
	l.count("ok")
	l.log.Info("rules: replaced by PUT /api/v1/rules", "file", l.file, "rules", s.Len(), "sha256", s.Hash)
	return s, true, nil
}

// replaceFile replaces the rules file at path with data, durably, keeping
// its permissions (0644 for a new one).
func replaceFile(path string, data []byte) error {
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := vfs.ReplaceFile(path, data, perm); err != nil {
		return fmt.Errorf("write rules file: %w", err)
	}
	return nil
}

func (l *Live) count(result string) {
	if l.metrics != nil {
		l.metrics.reloads.WithLabelValues(result).Inc()
	}
}

// WatchSettle is how long Watch waits after the last change it saw
// before it reloads.
const WatchSettle = 100 * time.Millisecond

// Watch reloads the file whenever its directory changes (an editor's
// write, or an atomic rename over it, as configuration managers do:
// the safe way, since a reload may read a file half written) until ctx
// ends. It watches the directory, not the file, so that a
// renamed-over file stays watched. Reloads that find the same bytes
// change nothing. changed, if not nil, is called after each reload
// attempt (for tests).
func (l *Live) Watch(ctx context.Context, changed func(bool, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch rules file: %w", err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(l.file)); err != nil {
		return fmt.Errorf("watch rules file: %w", err)
	}
	if l.watching != nil {
		l.watching()
	}
	// An editor or a deploy tool makes several events of one change:
	// reload once they have stopped for a moment.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			settle.Reset(WatchSettle)
		case <-settle.C:
			ok2, err := l.Reload()
			if changed != nil {
				changed(ok2, err)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			l.log.Warn("rules: watching the rules file", "file", l.file, "err", err)
		}
	}
}
