package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/server"
)

// TestExampleConfig: the documented example loads, and flags win over it.
func TestExampleConfig(t *testing.T) {
	c, err := loadConfig("../../sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveCommand.flags(fs)
	if err := fs.Parse([]string{"--listen", ":9999"}); err != nil {
		t.Fatal(err)
	}
	var o serveOpts
	cfg := server.DefaultConfig()
	o.cfg, o.listen = &cfg, ":9999"
	if err := c.apply(&o, fs); err != nil {
		t.Fatal(err)
	}
	if o.listen != ":9999" || o.storage.data != "sluice-data" || o.retention != 720*time.Hour || cfg.Loki.MaxLabels != 15 {
		t.Errorf("applied: listen %q data %q retention %v labels %d", o.listen, o.storage.data, o.retention, cfg.Loki.MaxLabels)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"listne: x\n", "field listne not found"},
		{"auth:\n  - token: t\n", "give either token or user"},
		{"auth:\n  - token: t\n    user: u\n    tenants: [a]\n", "give either token or user"},
	} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, []byte(tc.yaml), 0o644)
		if _, err := loadConfig(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
