package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by calls on a closed Log.
	ErrClosed = errors.New("wal: log closed")
	// ErrBroken is returned by every Append after an fdatasync (or a
	// repair of a failed write) failed: what the kernel holds of the
	// segment is unknown, so nothing more is acknowledged until the log
	// is reopened and recovered. The error also wraps the original cause.
	ErrBroken = errors.New("wal: log broken by an earlier error")
	// ErrTooLarge is returned by Append for a payload above
	// Options.MaxPayload.
	ErrTooLarge = errors.New("wal: payload too large")
	// ErrCorrupt matches every *CorruptionError with errors.Is.
	ErrCorrupt = errors.New("wal: corrupt segment")
)

// CorruptionError reports damaged bytes in a segment: a frame or a header
// whose length or checksum does not check out.
type CorruptionError struct {
	Segment uint64
	// Offset is the byte offset in the segment file where the damage
	// starts.
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corrupt segment %s at offset %d: %s", segmentName(e.Segment), e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }
