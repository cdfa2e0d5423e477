package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/server"
)

// The syslog limits: the example's values are the defaults, a file sets
// them, a flag wins over the file.
func TestSyslogConfig(t *testing.T) {
	apply := func(t *testing.T, path string, args ...string) server.SyslogConfig {
		t.Helper()
		c, err := loadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveCommand.flags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		var o serveOpts
		cfg := server.DefaultConfig()
		o.cfg = &cfg
		fs.Visit(func(f *flag.Flag) { // what the flags set, on this cfg
			switch f.Name {
			case "syslog-idle-timeout":
				cfg.Syslog.IdleTimeout = f.Value.(flag.Getter).Get().(time.Duration)
			case "syslog-max-connections":
				cfg.Syslog.MaxConns = f.Value.(flag.Getter).Get().(int)
			}
		})
		if err := c.apply(&o, fs); err != nil {
			t.Fatal(err)
		}
		return cfg.Syslog
	}
	if got, want := apply(t, "../../sluice.example.yaml"), server.DefaultSyslogConfig(); got != want {
		t.Errorf("example: %+v, want the defaults %+v", got, want)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("syslog:\n  max_message_bytes: 4096\n  idle_timeout: 5s\n  max_connections: 10\n  udp_receive_buffer_bytes: 8388608\n"), 0o644)
	want := server.SyslogConfig{MaxMessageBytes: 4096, IdleTimeout: 5 * time.Second, MaxConns: 10, UDPReceiveBuffer: 8 << 20}
	if got := apply(t, p); got != want {
		t.Errorf("file: %+v, want %+v", got, want)
	}
	want.IdleTimeout, want.MaxConns = time.Second, -1
	if got := apply(t, p, "--syslog-idle-timeout", "1s", "--syslog-max-connections", "-1"); got != want {
		t.Errorf("flags over the file: %+v, want %+v", got, want)
	}
	os.WriteFile(p, []byte("syslog:\n  idle_timeout: soon\n"), 0o644)
	c, err := loadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	var o serveOpts
	cfg := server.DefaultConfig()
	o.cfg = &cfg
	if err := c.apply(&o, flag.NewFlagSet("serve", flag.ContinueOnError)); err == nil {
		t.Error("idle_timeout: soon accepted")
	}
}
