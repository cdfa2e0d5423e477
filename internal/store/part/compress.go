package part

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicelog/sluice/internal/bin"
)

// Codecs of a stored stream.
const (
	codecRaw  = 0
	codecZstd = 1
)

// minCompress is the size below which a stream is stored raw: zstd's frame
// overhead outweighs what it could save.
const minCompress = 64

var (
	encoderOnce sync.Once
	zenc, zfast *zstd.Encoder
	zdec        *zstd.Decoder
)

// codecs returns the encoder (the fast one for parts that will soon be
// merged) and the decoder.
func codecs(fast bool) (*zstd.Encoder, *zstd.Decoder) {
	encoderOnce.Do(func() {
		newEncoder := func(level zstd.EncoderLevel) *zstd.Encoder {
			e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
				zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true), zstd.WithWindowSize(1<<22))
			if err != nil {
				panic(err) // only bad options fail
			}
			return e
		}
		zenc, zfast = newEncoder(zstd.SpeedDefault), newEncoder(zstd.SpeedFastest)
		var err error
		zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			panic(err)
		}
	})
	if fast {
		return zfast, zdec
	}
	return zenc, zdec
}

// appendStream appends src as a stored stream: codec, raw length, stored
// length, bytes. It compresses when that pays (faster and less with fast).
func appendStream(dst, src []byte, fast bool) []byte {
	if len(src) >= minCompress {
		enc, _ := codecs(fast)
		start := len(dst)
		dst = append(dst, codecZstd)
		dst = binary.AppendUvarint(dst, uint64(len(src)))
		// Reserve the length by compressing after a worst-case varint.
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0, 0)
		body := len(dst)
		dst = enc.EncodeAll(src, dst)
		if n := len(dst) - body; n < len(src)-len(src)/16 {
			var l [5]byte
			putUvarint5(l[:], uint64(n))
			copy(dst[lenAt:], l[:])
			return dst
		}
		dst = dst[:start]
	}
	dst = append(dst, codecRaw)
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	return append(dst, src...)
}

// putUvarint5 writes v as a 5-byte uvarint (padded with continuation
// bytes), so a length can be reserved before it is known.
func putUvarint5(b []byte, v uint64) {
	for i := range 4 {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	b[4] = byte(v)
}

// maxStream bounds a stream's raw length, so a corrupt length never makes
// a huge allocation.
const maxStream = 1 << 30

// skipStream moves d past a stored stream.
func skipStream(d *bin.Reader) {
	d.Byte("stream codec")
	d.Uvarint("stream raw length")
	d.BytesN("stream")
}

// compressedLen returns the decompressed length of a stored stream
// (appendStream) that is compressed.
func compressedLen(stored []byte) (uint64, bool) {
	if len(stored) == 0 || stored[0] != codecZstd {
		return 0, false
	}
	n, k := binary.Uvarint(stored[1:])
	return n, k > 0 && n <= maxStream
}

// readStream reads one stored stream from d, decompressing it at the end
// of buf when needed, and returns its raw bytes (a view of d's input when
// stored raw) and buf extended.
func readStream(d *bin.Reader, buf []byte) ([]byte, []byte) {
	codec := d.Byte("stream codec")
	rawLen := d.Uvarint("stream raw length")
	data := d.BytesN("stream")
	if d.Err() != nil {
		return nil, buf
	}
	if rawLen > maxStream {
		d.Fail("stream raw length")
		return nil, buf
	}
	switch codec {
	case codecRaw:
		if rawLen != uint64(len(data)) {
			d.Fail("raw stream length")
			return nil, buf
		}
		return data, buf
	case codecZstd:
		_, dec := codecs(false)
		start := len(buf)
		out, err := dec.DecodeAll(data, buf)
		if err != nil {
			d.Fail(fmt.Sprintf("stream: %v", err))
			return nil, buf
		}
		if uint64(len(out)-start) != rawLen {
			d.Fail("stream decompressed length")
			return nil, out[:start]
		}
		return out[start:len(out):len(out)], out
	}
	d.Fail("stream codec")
	return nil, buf
}
