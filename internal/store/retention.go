package store

import "time"

// Retention returns the age past which the store drops parts (0: none),
// for the limits a query API reports.
func (s *Store) Retention() time.Duration { return s.opts.Retention }
