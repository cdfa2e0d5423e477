package syslog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestNextFrame(t *testing.T) {
	in := "plain one\r\n10 octet\ntwo\n" + "9 counted\r\n" + "last no newline"
	r := bufio.NewReader(bytes.NewReader([]byte(in)))
	var got []string
	for {
		m, err := NextFrame(r, nil)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m))
	}
	// An octet-counted frame's final LF (and a CR before it) is dropped;
	// one inside it is kept.
	want := []string{"plain one", "octet\ntwo", "counted", "last no newline"}
	if len(got) != len(want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// FuzzNextFrame: any stream frames or fails with ErrFrame, never panics.
func FuzzNextFrame(f *testing.F) {
	f.Add([]byte("5 hello3 abc\nline\n"))
	f.Add([]byte("99999999 x"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReader(bytes.NewReader(in))
		for range len(in) + 1 {
			_, err := NextFrame(r, nil)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrFrame) {
					t.Fatalf("error %v", err)
				}
				return
			}
		}
	})
}
