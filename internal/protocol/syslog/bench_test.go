package syslog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"
)

func BenchmarkFramer(b *testing.B) {
	for _, framing := range []string{"lf", "octet"} {
		b.Run("framing="+framing, func(b *testing.B) {
			var in []byte
			for i := 0; len(in) < 1<<20; i++ {
				msg := fmt.Sprintf("<34>1 2026-01-15T08:00:%02d.123Z web-%d sshd %d - - Accepted publickey for deploy from 10.0.4.17 port 52144 ssh2", i%60, i%7, 1000+i)
				if framing == "octet" {
					in = fmt.Appendf(in, "%d %s\n", len(msg)+1, msg)
				} else {
					in = append(append(in, msg...), '\n')
				}
			}
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			r := bytes.NewReader(in)
			br := bufio.NewReaderSize(r, 64<<10)
			for b.Loop() {
				r.Reset(in)
				br.Reset(r)
				fr := NewFramer(br, 0)
				for {
					if _, err := fr.Next(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
			}
		})
	}
}
