// Package pgtest starts a private PostgreSQL 15 server for tests: a
// temporary data directory, trust authentication, a free port on
// 127.0.0.1, stopped by its PID. scripts/e2e-setup.sh installs the Debian
// package postgresql-15. As root, initdb and pg_ctl run as the postgres
// user (initdb refuses root).
//
// Without the binaries a test is skipped with a message saying so, unless
// CI=true: then it fails.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinDir is where Debian's postgresql-15 puts its server binaries.
var BinDir = "/usr/lib/postgresql/15/bin"

// Server is a running test server.
type Server struct {
	t       testing.TB
	dir     string // holds data/, the socket and the log
	Port    int
	asUser  string // "postgres" when run as root, "" otherwise
	running bool
}

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := os.Stat(filepath.Join(BinDir, "initdb")); err != nil {
		msg := fmt.Sprintf("PostgreSQL 15 is not installed (%s/initdb: %v); scripts/e2e-setup.sh installs postgresql-15", BinDir, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "sluice-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: dir}
	t.Cleanup(func() {
		s.Stop()
		os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		s.asUser = "postgres"
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, and there is no postgres user to run initdb as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Port = freePort(t)
	s.Start()
	return s
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// Conn connects to the server, failing t if it cannot; the connection
// is closed when t ends.
func (s *Server) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// DSN returns the connection string of the postgres database.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

// run runs a server binary, as the postgres user when root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	bin := filepath.Join(BinDir, name)
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// Start starts the server (again, after Stop) and waits until it accepts
// connections.
func (s *Server) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=50", s.Port, s.dir)
	if out, err := s.run("pg_ctl", "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	s.running = true
}

// Stop stops the server by its PID (a fast shutdown: SIGINT) and waits
// for it to exit.
func (s *Server) Stop() {
	if !s.running {
		return
	}
	s.running = false
	pid, err := s.pid()
	if err != nil {
		s.t.Errorf("stop postgres: %v", err)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		s.t.Errorf("stop postgres (pid %d): %v", pid, err)
		return
	}
	// The postmaster is not our child: wait for it to be gone.
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i > 60000 {
			s.t.Errorf("postgres (pid %d) still runs a minute after SIGINT", pid)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// pid reads the postmaster's PID from postmaster.pid.
func (s *Server) pid() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, errors.New("postmaster.pid: no pid on its first line")
	}
	return pid, nil
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
