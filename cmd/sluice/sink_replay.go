package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// sinkReplay runs `sluice sink dead-letter NAME --replay --config FILE`:
// the sink NAME of the config file replays its dead letter, in the data
// directory --data or, without it, the config's data.
func sinkReplay(ctx context.Context, e *env, config, data, name string) error {
	if config == "" {
		return usageError("sink dead-letter --replay needs --config: the file that defines the sink's destination")
	}
	c, err := loadConfig(config)
	if err != nil {
		return err
	}
	if data == "" {
		data = c.Data
	}
	if data == "" {
		return usageError("sink dead-letter --replay needs --data (the config file %s names no data directory)", config)
	}
	var sc []sinkConfig
	for _, s := range c.Sinks {
		if s.Name == name {
			sc = append(sc, s)
		}
	}
	if len(sc) == 0 {
		return fmt.Errorf("sink dead-letter --replay: config %s has no sink %q", config, name)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := buildSinks(sc, data, nil, log)
	if err != nil {
		return err
	}
	res, err := m.Sinks()[0].Replay(ctx)
	fmt.Fprintf(e.stdout, "sink %q: %d dead-lettered records read, %d delivered and removed, %d rejected again and kept\n",
		name, res.Read, res.Delivered, res.Kept)
	return err
}
