package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/vfs"
)

// SyncMode says when appended bytes are made durable.
type SyncMode int

const (
	// SyncAlways acknowledges an Append only after the fdatasync that
	// covers its bytes returned nil. Concurrent appends share one write
	// and one fdatasync (group commit). The zero value.
	SyncAlways SyncMode = iota
	// SyncInterval acknowledges an Append once its bytes are written (in
	// the page cache) and runs an fdatasync at least every Interval. A
	// crash loses up to Interval of acknowledged appends.
	SyncInterval
	// SyncNever syncs only at Rotate and Close. UNSAFE: a machine crash
	// loses every acknowledged append since the last rotation. For tests
	// and benchmarks.
	SyncNever
)

func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// SyncPolicy is a SyncMode and, for SyncInterval, the interval.
type SyncPolicy struct {
	Mode     SyncMode
	Interval time.Duration
}

func (p SyncPolicy) String() string {
	if p.Mode == SyncInterval {
		return "interval=" + p.Interval.String()
	}
	return p.Mode.String()
}

// ParseSyncPolicy parses "always", "never" or "interval=DURATION" (for
// example "interval=10ms"), the forms String prints.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch {
	case s == "always":
		return SyncPolicy{Mode: SyncAlways}, nil
	case s == "never":
		return SyncPolicy{Mode: SyncNever}, nil
	case strings.HasPrefix(s, "interval="):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "interval="))
		if err != nil {
			return SyncPolicy{}, fmt.Errorf("wal: sync policy %q: %w", s, err)
		}
		if d <= 0 {
			return SyncPolicy{}, fmt.Errorf("wal: sync policy %q: interval must be positive", s)
		}
		return SyncPolicy{Mode: SyncInterval, Interval: d}, nil
	}
	return SyncPolicy{}, fmt.Errorf("wal: sync policy %q: want always, never or interval=DURATION (e.g. interval=10ms)", s)
}

// Defaults for the zero fields of Options.
const (
	DefaultSegmentSize = 64 << 20
	DefaultMaxPayload  = MaxPayloadLimit
)

// Options configure Open.
type Options struct {
	// FS is the filesystem; nil means vfs.OS.
	FS vfs.FS
	// Dir holds the segments and nothing else of sluice's. Open creates
	// it if needed.
	Dir  string
	Sync SyncPolicy
	// BlockingSync syncs segments by File.Sync, a blocking fdatasync
	// that holds the writer's P (with GOMAXPROCS=1 the only one) until
	// it returns or sysmon takes the P back. By default, on the OS's
	// file system, segments are synced through an io_uring (vfs.Syncer)
	// where the kernel offers one, and the writer waits holding nothing.
	BlockingSync bool
	// SegmentSize: a segment is closed and the next one started once it
	// exceeds this many bytes. 0 means DefaultSegmentSize.
	SegmentSize int64
	// MaxPayload bounds the payload of one Append; 0 means
	// DefaultMaxPayload. It cannot exceed MaxPayloadLimit.
	MaxPayload int
	// Logger receives the corruption and repair reports; nil means
	// slog.Default().
	Logger *slog.Logger
	// OnSync, if set, is called after each successful fdatasync of a
	// segment with its duration and the bytes it made durable. It runs on
	// the Log's writer goroutine and must not block or call the Log.
	OnSync func(d time.Duration, bytes int)
}

// withDefaults validates o and fills in its zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Dir == "" {
		return o, errors.New("wal: options: Dir is empty")
	}
	switch o.Sync.Mode {
	case SyncAlways, SyncNever:
	case SyncInterval:
		if o.Sync.Interval <= 0 {
			return o, fmt.Errorf("wal: options: sync policy %v: interval must be positive", o.Sync)
		}
	default:
		return o, fmt.Errorf("wal: options: unknown sync mode %v", o.Sync.Mode)
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SegmentSize < 0 {
		return o, fmt.Errorf("wal: options: negative SegmentSize %d", o.SegmentSize)
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.MaxPayload < 0 || o.MaxPayload > MaxPayloadLimit {
		return o, fmt.Errorf("wal: options: MaxPayload %d outside [0, %d]", o.MaxPayload, MaxPayloadLimit)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
