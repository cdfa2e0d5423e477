package wal_test

import (
	"fmt"
	"os"

	"github.com/sluicelog/sluice/internal/wal"
)

func Example() {
	dir, err := os.MkdirTemp("", "wal-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	opts := wal.Options{Dir: dir, Sync: wal.SyncPolicy{Mode: wal.SyncAlways}}

	// A fresh log: nothing to replay.
	l, _, err := wal.Open(opts, 0, nil)
	if err != nil {
		panic(err)
	}
	for _, batch := range []string{"batch one", "batch two"} {
		// Durable once Append returns nil: acknowledge the batch now.
		if _, err := l.Append([]byte(batch)); err != nil {
			panic(err)
		}
	}
	// The store flushes its head up to here, then drops what it covers.
	next, err := l.Rotate()
	if err != nil {
		panic(err)
	}
	if _, err := l.Append([]byte("batch three")); err != nil {
		panic(err)
	}
	if err := l.RemoveBefore(next); err != nil {
		panic(err)
	}
	if err := l.Close(); err != nil {
		panic(err)
	}

	// After a restart: replay what the flushed parts do not cover.
	l, rep, err := wal.Open(opts, next, func(pos wal.Pos, payload []byte) error {
		fmt.Printf("segment %d: %s\n", pos.Segment-next, payload)
		return nil
	})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	fmt.Println("records:", rep.Records)
	// Output:
	// segment 0: batch three
	// records: 1
}
