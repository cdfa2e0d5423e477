package store

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// Damage is stored data that reads found damaged and leave out: one block
// of a part, or a whole part whose header, footer or index is damaged.
// Damage is quarantined, never deleted: the file stays as it is.
type Damage struct {
	Tenant, Day string
	Part        string // the part file's path
	// Block is the damaged block's index in the part; -1: the whole part.
	Block  int
	Offset int64 // where the damage was found in the file
	// Rows is how many rows are left out, and MinTime and MaxTime their
	// time range, as the part's index (for a block) or the MANIFEST (for
	// a part) says; Rows is 0 when neither is readable (a part set aside
	// by an earlier Open: its rows are those of its day).
	Rows             int64
	MinTime, MaxTime int64
	Reason           string
}

// String says what was skipped, for a query's warnings and logs.
func (d Damage) String() string { return "damaged data skipped: " + d.Describe() }

// Describe says where the damage is and what it holds.
func (d Damage) Describe() string {
	rng := ""
	if d.Rows > 0 {
		rng = fmt.Sprintf(", %d rows from %s to %s", d.Rows, fmtTime(d.MinTime), fmtTime(d.MaxTime))
	}
	if d.Block >= 0 {
		return fmt.Sprintf("part %s block %d (byte %d%s) of tenant %s: %s", d.Part, d.Block, d.Offset, rng, d.Tenant, d.Reason)
	}
	return fmt.Sprintf("part %s (tenant %s, day %s%s) is unreadable and set aside: %s", d.Part, d.Tenant, d.Day, rng, d.Reason)
}

func fmtTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// overlaps says whether the damage may hold rows of tenant in [from, to].
func (d *Damage) overlaps(tenant string, from, to int64) bool {
	return d.Tenant == tenant && d.MinTime <= to && d.MaxTime >= from
}

// blockDamage describes damage ce found in block ce.Block of p.
func blockDamage(p *livePart, ce *part.CorruptionError) Damage {
	d := Damage{Tenant: p.info.Tenant, Day: p.info.Day, Part: ce.Path, Block: ce.Block, Offset: ce.Offset, Reason: ce.Reason}
	if ce.Block >= 0 && ce.Block < len(p.rd.Blocks) {
		b := &p.rd.Blocks[ce.Block]
		d.Rows, d.MinTime, d.MaxTime = int64(b.Rows), b.MinTime, b.MaxTime
	}
	return d
}

// partDamage describes a part of the MANIFEST that does not open.
func partDamage(file string, info partInfo, err error) Damage {
	d := Damage{Tenant: info.Tenant, Day: info.Day, Part: file, Block: -1, Offset: -1, Reason: err.Error(),
		Rows: info.Rows, MinTime: info.MinTime, MaxTime: info.MaxTime}
	var ce *part.CorruptionError
	if errors.As(err, &ce) {
		d.Offset, d.Reason = ce.Offset, ce.Reason
	}
	return d
}

// setAsideParts lists the parts an earlier Open set aside
// (parts/TENANT/DAY/ID.part.corrupt), with why they do not open. Their
// rows are taken to span their whole day.
func setAsideParts(fs vfs.FS, dir string) ([]Damage, error) {
	root := path.Join(dir, "parts")
	tenants, err := fs.List(root)
	if vfs.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list parts: %w", err)
	}
	var out []Damage
	for _, t := range tenants {
		days, err := fs.List(path.Join(root, t))
		if err != nil {
			continue // not a directory
		}
		for _, day := range days {
			files, err := fs.List(path.Join(root, t, day))
			if err != nil || !validDay(day) {
				continue
			}
			start, err := time.Parse(time.DateOnly, day)
			if err != nil {
				continue
			}
			for _, f := range files {
				if !strings.HasSuffix(f, ".part.corrupt") {
					continue
				}
				p := path.Join(root, t, day, f)
				d := Damage{Tenant: t, Day: day, Part: p, Block: -1, Offset: -1, Reason: "set aside by an earlier open",
					MinTime: start.UnixNano(), MaxTime: start.UnixNano() + int64(24*time.Hour) - 1}
				if rd, err := part.Open(fs, p); err != nil {
					var ce *part.CorruptionError
					if errors.As(err, &ce) {
						d.Offset, d.Reason = ce.Offset, "set aside by an earlier open: "+ce.Reason
					}
				} else {
					// It opens now: the damage was elsewhere (a block), or
					// gone (the file was restored); still not served.
					_ = rd.Close()
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// noteDamage records damage that a read of the snapshot skipped.
func (sn *Snapshot) noteDamage(d Damage) {
	sn.dmgMu.Lock()
	defer sn.dmgMu.Unlock()
	if !slices.ContainsFunc(sn.damage, func(e Damage) bool { return e.Part == d.Part && e.Block == d.Block }) {
		sn.damage = append(sn.damage, d)
	}
}

// skipper returns how reads of p's blocks treat damage: note it and
// read on (true), unless the snapshot fails on damage (nil).
func (sn *Snapshot) skipper(p *livePart) func(error) bool {
	if sn.strict {
		return nil
	}
	return func(err error) bool {
		var ce *part.CorruptionError
		if !errors.As(err, &ce) || ce.Block < 0 {
			return false
		}
		sn.noteDamage(blockDamage(p, ce))
		return true
	}
}

// FailOnDamage makes reads of the snapshot fail at the first damaged block
// (with an error matching part.ErrCorrupt that names the part file, the
// block and the offset) rather than skip it, and Export fail before
// writing anything when an unreadable part holds rows it would write.
// REQUIRES: no read of the snapshot has begun.
func (sn *Snapshot) FailOnDamage() { sn.strict = true }

// Damage returns what reads of the snapshot have skipped so far: the
// damaged blocks they met, and the unreadable parts holding rows of the
// tenants and times that Streams was asked for. Ordered by part and
// block.
func (sn *Snapshot) Damage() []Damage {
	sn.dmgMu.Lock()
	out := slices.Clone(sn.damage)
	sn.dmgMu.Unlock()
	slices.SortFunc(out, func(a, b Damage) int { return cmp.Or(cmp.Compare(a.Part, b.Part), cmp.Compare(a.Block, b.Block)) })
	return out
}

// Warnings returns Damage as text, one line each (for a query's
// "warnings").
func (sn *Snapshot) Warnings() []string {
	var out []string
	for _, d := range sn.Damage() {
		out = append(out, d.String())
	}
	return out
}

// noteBadParts records the unreadable parts that may hold rows of tenant
// in [from, to].
func (sn *Snapshot) noteBadParts(tenant string, from, to int64) {
	for i := range sn.badParts {
		if d := &sn.badParts[i]; d.overlaps(tenant, from, to) {
			sn.noteDamage(*d)
		}
	}
}

// DamagedParts returns the parts known to be unreadable: set aside now
// or by an earlier Open, or (read-only) left where they are.
func (s *Store) DamagedParts() []Damage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.badParts)
}

// onBlockDamage counts and logs a block found damaged.
func (s *Store) onBlockDamage(ce *part.CorruptionError) {
	s.quarantined.Add(1)
	s.log.Error("damaged block quarantined: reads skip it and say so", "part", ce.Path, "block", ce.Block,
		"offset", ce.Offset, "reason", ce.Reason)
}
