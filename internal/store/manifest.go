package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"slices"

	"github.com/sluicelog/sluice/internal/vfs"
)

// ManifestVersion is the manifest's format version.
// FROZEN: manifests written with it must stay readable.
const ManifestVersion = 1

const manifestName = "MANIFEST"

// manifest is the durable list of live parts and the WAL position they
// cover.
type manifest struct {
	Version int `json:"version"`
	// WALFrom is the first WAL segment whose records are not in a part:
	// recovery replays from it, and every earlier segment may be deleted.
	WALFrom uint64     `json:"wal_from"`
	NextID  uint64     `json:"next_id"`
	Parts   []partInfo `json:"parts"`
}

// partInfo describes one live part.
type partInfo struct {
	ID uint64 `json:"id"`
	// Seq orders parts by the age of their data: a flushed part's is its
	// id, a merged part's the smallest of its inputs'. Rows with equal
	// times are read in Seq order, which is the order they arrived in.
	Seq       uint64 `json:"seq"`
	Tenant    string `json:"tenant"`
	Day       string `json:"day"` // YYYY-MM-DD, UTC
	Level     int    `json:"level"`
	Rows      int64  `json:"rows"`
	MinTime   int64  `json:"min_time"`
	MaxTime   int64  `json:"max_time"`
	LineBytes int64  `json:"line_bytes"`
	Size      int64  `json:"size"`
	// Written counts every byte written to produce this part and its
	// inputs, transitively: Written/LineBytes is the write amplification.
	Written int64 `json:"written"`
}

func (p *partInfo) path() string {
	return path.Join("parts", p.Tenant, p.Day, fmt.Sprintf("%016d.part", p.ID))
}

func loadManifest(fs vfs.FS, dir string) (*manifest, error) {
	data, release, err := fs.Map(path.Join(dir, manifestName))
	if vfs.IsNotExist(err) {
		return &manifest{Version: ManifestVersion, NextID: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	defer release()
	name := path.Join(dir, manifestName)
	body, err := checkManifest(data)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w (the directory needs repair; nothing was changed)", name, err)
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", name, err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("manifest version %d: this sluice reads version %d", m.Version, ManifestVersion)
	}
	for _, p := range m.Parts {
		if err := checkTenant(p.Tenant); err != nil || !validDay(p.Day) || p.ID >= m.NextID {
			return nil, fmt.Errorf("manifest: bad part entry %+v", p)
		}
	}
	return &m, nil
}

// save replaces the manifest atomically: write a temporary file, sync it,
// rename it over the old one, sync the directory.
func (m *manifest) save(fs vfs.FS, dir string) error {
	slices.SortFunc(m.Parts, func(a, b partInfo) int { return cmpUint(a.ID, b.ID) })
	data, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	tmp := path.Join(dir, manifestName+".tmp")
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	data = append(data, '\n')
	_, err = f.Write(fmt.Appendf(data, "%s%08x\n", manifestCRC, crc32.Checksum(data, castagnoli)))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path.Join(dir, manifestName))
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// The MANIFEST ends with a line "crc32c: XXXXXXXX\n" holding the CRC32C
// of every byte before it, so that a damaged manifest (one flipped digit
// of wal_from would skip a WAL segment) is refused, never read wrong.
const manifestCRC = "crc32c: "

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkManifest returns the JSON of a manifest whose checksum line
// matches.
func checkManifest(data []byte) ([]byte, error) {
	const tail = len(manifestCRC) + 8 + 1
	if len(data) < tail || data[len(data)-1] != '\n' || string(data[len(data)-tail:len(data)-9]) != manifestCRC {
		return nil, errors.New("no checksum line at its end")
	}
	body := data[:len(data)-tail]
	// Compared as text, not parsed: a parse would take 'A' for 'a', and a
	// flipped case bit would pass.
	if string(data[len(data)-9:len(data)-1]) != fmt.Sprintf("%08x", crc32.Checksum(body, castagnoli)) {
		return nil, errors.New("checksum mismatch: the file is damaged")
	}
	return body, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func validDay(d string) bool {
	if len(d) != 10 || d[4] != '-' || d[7] != '-' {
		return false
	}
	for i, c := range []byte(d) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
