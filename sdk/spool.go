package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// spool keeps batches that could not reach the server in files of a
// directory, one a batch, named by a sequence number so that they are
// sent in order. A file is a JSON header line then the request body as it
// would have been sent (already compressed).
type spool struct {
	dir   string
	max   int64
	mu    sync.Mutex
	seq   uint64
	bytes int64
	wake  chan struct{} // a file was added
}

type spoolHeader struct {
	Path     string `json:"path"` // the URL's path and query, the host left out
	Type     string `json:"content_type"`
	Encoding string `json:"content_encoding,omitempty"`
	Records  int    `json:"records"`
}

const spoolExt = ".spool"

func openSpool(dir string, max int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sdk: spool directory: %w", err)
	}
	sp := &spool{dir: dir, max: max, wake: make(chan struct{}, 1)}
	names, err := sp.list()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		seq, _ := strconv.ParseUint(strings.TrimSuffix(n, spoolExt), 10, 64)
		sp.seq = max2(sp.seq, seq)
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil {
			sp.bytes += fi.Size()
		}
	}
	if len(names) > 0 {
		sp.wake <- struct{}{}
	}
	return sp, nil
}

func max2(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// list returns the spool's files, oldest first.
func (sp *spool) list() ([]string, error) {
	ents, err := os.ReadDir(sp.dir)
	if err != nil {
		return nil, fmt.Errorf("sdk: read spool directory: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), spoolExt) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // zero-padded sequence numbers
	return names, nil
}

var errSpoolFull = errors.New("sdk: spool is full (Config.SpoolMaxBytes)")

// put writes one batch's body to a new file, fsynced, renamed into place.
func (sp *spool) put(h spoolHeader, body []byte) error {
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	size := int64(len(hdr) + 1 + len(body))
	sp.mu.Lock()
	if sp.bytes+size > sp.max {
		sp.mu.Unlock()
		return errSpoolFull
	}
	sp.seq++
	name := filepath.Join(sp.dir, fmt.Sprintf("%020d%s", sp.seq, spoolExt))
	sp.bytes += size
	sp.mu.Unlock()
	err = writeSync(name, hdr, body)
	if err != nil {
		sp.mu.Lock()
		sp.bytes -= size
		sp.mu.Unlock()
		return fmt.Errorf("sdk: spool: %w", err)
	}
	select {
	case sp.wake <- struct{}{}:
	default:
	}
	return nil
}

func writeSync(name string, hdr, body []byte) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(append(hdr, '\n'), body...))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// read returns the header and body of a spool file.
func (sp *spool) read(name string) (spoolHeader, []byte, error) {
	var h spoolHeader
	b, err := os.ReadFile(filepath.Join(sp.dir, name))
	if err != nil {
		return h, nil, err
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return h, nil, fmt.Errorf("spool file %s has no header line", name)
	}
	if err := json.Unmarshal(b[:i], &h); err != nil {
		return h, nil, fmt.Errorf("spool file %s: header: %w", name, err)
	}
	return h, b[i+1:], nil
}

func (sp *spool) remove(name string) {
	path := filepath.Join(sp.dir, name)
	if fi, err := os.Stat(path); err == nil {
		sp.mu.Lock()
		sp.bytes -= fi.Size()
		sp.mu.Unlock()
	}
	os.Remove(path)
}

// drainSpool sends the spool's files, oldest first, until the Client is
// closed; a file is removed once the server has taken it. What is left at
// Close stays on disk for the next Client with the same SpoolDir.
func (c *Client) drainSpool() {
	sp := c.spool
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	s := newSender(c)
	base := c.base
	attempt := 0
	for {
		names, err := sp.list()
		if err != nil {
			c.report(err)
		}
		if len(names) == 0 {
			select {
			case <-sp.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		for _, name := range names {
			h, body, err := sp.read(name)
			if err != nil {
				// A file cut short or not ours: it cannot be sent.
				c.report(fmt.Errorf("sdk: spool: %w; file removed", err))
				sp.remove(name)
				continue
			}
			status, wait, err := s.post(ctx, base+h.Path, body, h.Type, h.Encoding)
			c.mu.Lock()
			c.stats.Requests++
			c.mu.Unlock()
			if err != nil && ctx.Err() != nil {
				return // cut off by Close: the file stays for the next Client
			}
			if err == nil || !retryable(status) {
				sp.remove(name)
				c.mu.Lock()
				if err == nil {
					c.stats.Sent += uint64(h.Records - min(s.rejected, h.Records))
					c.stats.Failed += uint64(min(s.rejected, h.Records))
				} else {
					c.stats.Failed += uint64(h.Records)
				}
				c.mu.Unlock()
				if err != nil {
					c.report(fmt.Errorf("sdk: spooled batch of %d records refused: %w", h.Records, err))
				}
				attempt = 0
				continue
			}
			attempt++
			c.mu.Lock()
			c.stats.Retries++
			c.mu.Unlock()
			if d := backoff(c.cfg.MinBackoff, c.cfg.MaxBackoff, attempt); d > wait {
				wait = d
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			break // and start again from the oldest file
		}
	}
}

// report passes err to Config.OnError, if set.
func (c *Client) report(err error) {
	if c.cfg.OnError != nil {
		c.cfg.OnError(err)
	}
}
