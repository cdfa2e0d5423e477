package part

import (
	"errors"
	"fmt"
)

// ErrCorrupt is matched by every error reporting a damaged part.
var ErrCorrupt = errors.New("part: corrupt")

// CorruptionError says where a part is damaged.
type CorruptionError struct {
	Path   string
	Offset int64 // in the file
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("part %s: corrupt at byte %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) match.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }
