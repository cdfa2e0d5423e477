package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setReceiveBuffer asks for a receive buffer of n bytes for c and returns
// the bytes granted. SO_RCVBUFFORCE passes net.core.rmem_max but needs
// CAP_NET_ADMIN; without it, SO_RCVBUF is capped at rmem_max. (Linux
// doubles the request for its bookkeeping and reports the double.)
func setReceiveBuffer(c *net.UDPConn, n int) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var got int
	var serr error
	err = rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) != nil {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n); serr != nil {
				return
			}
		}
		got, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, fmt.Errorf("set receive buffer: %w", err)
	}
	return got / 2, nil
}

// socketDrops returns a function reading the datagrams the kernel dropped
// for c's socket: the drops column of its line in /proc/net/udp (or
// udp6), found by the socket's inode.
func socketDrops(c *net.UDPConn) (func() (uint64, error), error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("stat the socket: %w", serr)
	}
	inode := strconv.FormatUint(st.Ino, 10)
	read := func() (uint64, error) {
		for _, table := range []string{"/proc/self/net/udp", "/proc/self/net/udp6"} {
			n, ok, err := procUDPDrops(table, inode)
			if err != nil || ok {
				return n, err
			}
		}
		return 0, fmt.Errorf("socket inode %s not in /proc/self/net/udp or udp6", inode)
	}
	if _, err := read(); err != nil {
		return nil, err
	}
	return read, nil
}

// procUDPDrops finds the socket of inode in a /proc/net/udp table and
// returns its drops. A line reads:
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
func procUDPDrops(table, inode string) (uint64, bool, error) {
	data, err := os.ReadFile(table)
	if err != nil {
		return 0, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 13 || string(f[9]) != inode {
			continue
		}
		n, err := strconv.ParseUint(string(f[12]), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: drops of inode %s: %w", table, inode, err)
		}
		return n, true, nil
	}
	return 0, false, sc.Err()
}
