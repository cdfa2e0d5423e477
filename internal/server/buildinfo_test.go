package server

import (
	"encoding/json"
	"testing"
)

// TestBuildInfo: Loki's buildinfo shape, with the Loki version sluice
// answers as in "version" and sluice's own in "sluiceVersion".
func TestBuildInfo(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Version, cfg.Revision = "v0.0.0-20260115080000-0123456789ab", "0123456789abcdef+dirty"
	f := newFixture(t, cfg)
	code, body := f.do("GET", "/loki/api/v1/status/buildinfo", nil)
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("buildinfo: %d %s %v", code, body, err)
	}
	for k, want := range map[string]string{"version": lokiVersion, "revision": cfg.Revision, "sluiceVersion": cfg.Version} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for _, k := range []string{"branch", "buildUser", "buildDate", "goVersion"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s in %s", k, body)
		}
	}
	if got["goVersion"] == "" {
		t.Errorf("goVersion empty")
	}
}

// TestNoV2alphaTail: Loki serves no /loki/api/v2alpha/tail (only
// /loki/api/v1/tail and /api/prom/tail). Grafana's Loki data source
// probes it in some versions and takes v1 unless it answers 400, so it
// must answer as Loki: 404.
func TestNoV2alphaTail(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	if code, body := f.do("GET", "/loki/api/v2alpha/tail?query=%7Bapp%3D%22x%22%7D", nil); code != 404 {
		t.Errorf("v2alpha tail: %d %s, want 404", code, body)
	}
}
