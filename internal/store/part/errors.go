package part

import (
	"errors"
	"fmt"
)

// ErrCorrupt is matched by every error reporting a damaged part.
var ErrCorrupt = errors.New("part: corrupt")

// ErrNewerFormat is matched by the error of opening a part that a later
// sluice wrote, in a format version above Version: the part is sound,
// and this binary must not take it for damage (set it aside) but refuse
// to serve without it.
var ErrNewerFormat = errors.New("part: written in a newer format")

// CorruptionError says where a part is damaged.
type CorruptionError struct {
	Path string
	// Block is the index of the damaged block, or -1 when the damage is
	// not in a block (the header, footer, index or filters: the whole
	// part is unreadable).
	Block  int
	Offset int64 // in the file
	Reason string
}

func (e *CorruptionError) Error() string {
	if e.Block >= 0 {
		return fmt.Sprintf("part %s: block %d corrupt at byte %d: %s", e.Path, e.Block, e.Offset, e.Reason)
	}
	return fmt.Sprintf("part %s: corrupt at byte %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) match.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }
