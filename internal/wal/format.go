package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
)

// The segment format, byte by byte, is specified in docs/format/wal.md; this
// file is its only encoder and decoder.

// FormatVersion is the version written in every segment header.
//
// FROZEN: segments written with version 1 must stay readable forever. A
// change to the header or frame layout, the checksum or its seed takes a new
// version number and a reader for both.
const FormatVersion = 1

// MaxPayloadLimit is the largest payload a frame can carry. It is part of
// the format: a reader treats a larger length field as corruption rather
// than allocating for it. FROZEN with FormatVersion 1.
const MaxPayloadLimit = 64 << 20

const (
	// segmentMagic opens every segment file: "SLWL".
	segmentMagic = "SLWL"
	// headerSize is the size of the segment header: magic (4), version (1),
	// reserved zero (3), segment number (8), CRC32C of the preceding 16
	// bytes (4).
	headerSize = 20
	// frameHeaderSize is the size of a frame header: payload length (4),
	// CRC32C of the payload (4), CRC32C of the header (4).
	frameHeaderSize = 12

	segmentSuffix = ".wal"
	// segmentNameLen is the length of a segment file name: 20 digits hold
	// every uint64.
	segmentNameLen = 20 + len(segmentSuffix)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentName returns the file name of segment n, e.g.
// "00000000000000000042.wal".
func segmentName(n uint64) string {
	return fmt.Sprintf("%020d%s", n, segmentSuffix)
}

// parseSegmentName returns the number of the segment file called name, and
// false for any other name (temporary files, copies kept for forensics, the
// lock file).
func parseSegmentName(name string) (uint64, bool) {
	if len(name) != segmentNameLen || !strings.HasSuffix(name, segmentSuffix) {
		return 0, false
	}
	digits := name[:20]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// appendSegmentHeader appends the header of segment seg to dst.
func appendSegmentHeader(dst []byte, seg uint64) []byte {
	start := len(dst)
	dst = append(dst, segmentMagic...)
	dst = append(dst, FormatVersion, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, seg)
	sum := crc32.Checksum(dst[start:], castagnoli)
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// headerStatus is the verdict on a segment header.
type headerStatus int

const (
	headerOK headerStatus = iota
	headerBad
	// headerNewer is an intact header of a version this code cannot read.
	headerNewer
)

// checkSegmentHeader checks the first headerSize bytes of segment seg. The
// string explains a headerBad verdict.
func checkSegmentHeader(b []byte, seg uint64) (headerStatus, string) {
	if len(b) < headerSize {
		return headerBad, "incomplete segment header"
	}
	if string(b[:4]) != segmentMagic {
		return headerBad, "bad segment magic"
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:20]) {
		return headerBad, "segment header checksum mismatch"
	}
	if b[4] != FormatVersion {
		return headerNewer, fmt.Sprintf("segment format version %d", b[4])
	}
	if b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return headerBad, "nonzero reserved header bytes"
	}
	if got := binary.LittleEndian.Uint64(b[8:16]); got != seg {
		return headerBad, fmt.Sprintf("header names segment %d", got)
	}
	return headerOK, ""
}

// frameHeaderChecksum returns the header checksum of the frame at offset
// off of segment seg whose first 8 header bytes (length and payload
// checksum) are lenSum: the CRC32C of the segment number and the offset
// (both implicit, never stored) followed by lenSum. The seed binds a frame
// to where it was written, so a stale frame from another segment, or from
// another place in this one, never verifies. The header checksum lets a
// reader that lost its place reject a candidate offset without reading a
// payload.
//
// scratch provides room for the 24 checksummed bytes; callers pass memory
// they own so that nothing is allocated per frame.
func frameHeaderChecksum(scratch []byte, seg uint64, off int64, lenSum []byte) uint32 {
	b := binary.LittleEndian.AppendUint64(scratch[:0], seg)
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	b = append(b, lenSum[:8]...)
	return crc32.Checksum(b, castagnoli)
}

// appendFrameHeader appends the header of the frame at offset off of
// segment seg that carries payload. The payload itself follows it.
// REQUIRES: len(payload) <= MaxPayloadLimit.
func appendFrameHeader(dst []byte, seg uint64, off int64, payload []byte) []byte {
	dst = slices.Grow(dst, frameHeaderSize+24)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	// dst's spare room holds the checksummed bytes.
	sum := frameHeaderChecksum(dst[len(dst):len(dst)], seg, off, dst[start:])
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// appendFrame appends the whole frame (header and payload) to dst.
func appendFrame(dst []byte, seg uint64, off int64, payload []byte) []byte {
	dst = appendFrameHeader(dst, seg, off, payload)
	return append(dst, payload...)
}

// frameSize is the on-disk size of a frame carrying n payload bytes.
func frameSize(n int) int64 { return frameHeaderSize + int64(n) }
