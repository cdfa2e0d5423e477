package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicelog/sluice/internal/server"
)

// TestExampleConfig: the documented example loads, flags win over it, and
// every key of it is applied (TestExampleConfigKeys).
func TestExampleConfig(t *testing.T) {
	c, err := loadConfig(exampleConfig)
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

const exampleConfig = "../../sluice.example.yaml"

// sequenceSamples are values, for the keys of the example whose value is a
// list, that differ from the example's, each holding a string found in the
// applied options if the key is applied.
var sequenceSamples = map[string]struct {
	value any
	find  string
}{
	"auth":                  {[]any{map[string]any{"token": "sample-token-4711", "tenants": []any{"sample-tenant"}}}, "sample-token-4711"},
	"discover.service_name": {[]any{"sample-label-4712"}, "sample-label-4712"},
	"sinks":                 {[]any{map[string]any{"name": "sample-sink-4713", "type": "file"}}, "sample-sink-4713"},
}

// TestExampleConfigKeys checks every key of sluice.example.yaml, whatever
// keys it has: each must be known to loadConfig and applied to the serve
// options, and the options must hold the example's value after it is
// applied. It finds where a key goes by setting every key at once to a
// value of its own (numbers 900001, 900002, ...; durations as many
// seconds; other strings "sample-N"; lists from sequenceSamples) and
// looking for that value among the options (serveOpts and its
// server.Config, walked by reflection); a boolean key is flipped alone,
// and must change one option. Then the option found must hold the
// example's value (or, for a zero value, which means "the default", keep
// the default).
func TestExampleConfigKeys(t *testing.T) {
	raw, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	if err := yaml.Unmarshal(raw, &example); err != nil {
		t.Fatal(err)
	}
	type leaf struct {
		path  []string
		value any
	}
	var leaves []leaf
	var walk func(m map[string]any, path []string)
	walk = func(m map[string]any, path []string) {
		for k, v := range m {
			p := append(slices.Clone(path), k)
			if sub, ok := v.(map[string]any); ok {
				walk(sub, p)
				continue
			}
			leaves = append(leaves, leaf{p, v})
		}
	}
	walk(example, nil)
	slices.SortFunc(leaves, func(a, b leaf) int { return strings.Compare(strings.Join(a.path, "."), strings.Join(b.path, ".")) })
	if len(leaves) < 30 {
		t.Fatalf("the example has %d keys: not the file this test was written for", len(leaves))
	}

	defaults := optionValues(t, &serveOpts{cfg: ptr(server.DefaultConfig())})
	base := applied(t, example)

	// Every non-boolean key at once, each to a value of its own.
	perturbed := cloneMap(example)
	want := map[string]string{} // key to the value to find, canonical
	for i, l := range leaves {
		key := strings.Join(l.path, ".")
		var v any
		switch x := l.value.(type) {
		case bool:
			continue
		case int, float64:
			v = 900001 + i
			want[key] = strconv.Itoa(900001 + i)
		case string:
			if _, err := time.ParseDuration(x); err == nil && x != "" {
				v = fmt.Sprintf("%ds", 900001+i)
				want[key] = strconv.FormatInt(int64(time.Duration(900001+i)*time.Second), 10)
			} else {
				v = fmt.Sprintf("sample-%d", i)
				want[key] = v.(string)
			}
		case []any:
			sample, ok := sequenceSamples[key]
			if !ok {
				t.Errorf("%s: a list; add a value for it to sequenceSamples", key)
				continue
			}
			v, want[key] = sample.value, sample.find
		default:
			t.Errorf("%s: value %v of type %T: teach the test about it", key, l.value, l.value)
			continue
		}
		setPath(perturbed, l.path, v)
	}
	got := applied(t, perturbed)
	for _, l := range leaves {
		key := strings.Join(l.path, ".")
		var where []string
		if b, ok := l.value.(bool); ok {
			flipped := cloneMap(example)
			setPath(flipped, l.path, !b)
			after := applied(t, flipped)
			for p, v := range after {
				if base[p] != v {
					where = append(where, p)
				}
			}
		} else {
			w, ok := want[key]
			if !ok {
				continue // reported above
			}
			for p, v := range got {
				if v == w {
					where = append(where, p)
				}
			}
		}
		slices.Sort(where)
		if len(where) == 0 {
			t.Errorf("%s: not applied: no option of serve takes its value", key)
			continue
		}
		// The example's own value is in the option(s) found.
		exp := canonical(l.value)
		for _, p := range where {
			if _, seq := l.value.([]any); seq {
				break // an empty list: nothing to compare
			}
			if isZero(l.value) {
				if base[p] != defaults[p] {
					t.Errorf("%s: %v in the example (the default), but %s is %s after it is applied, not its default %s", key, l.value, p, base[p], defaults[p])
				}
				continue
			}
			if base[p] != exp {
				t.Errorf("%s: %v in the example, but %s is %s after it is applied", key, l.value, p, base[p])
			}
		}
		t.Logf("%s = %v -> %s", key, l.value, strings.Join(where, ", "))
	}
}

// applied loads config (a decoded YAML file) as loadConfig does and
// applies it to options with server.DefaultConfig, no flags given, and
// returns the options' values.
func applied(t *testing.T, config map[string]any) map[string]string {
	t.Helper()
	b, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(p)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	o := serveOpts{cfg: ptr(server.DefaultConfig())}
	if err := c.apply(&o, flag.NewFlagSet("serve", flag.ContinueOnError)); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	return optionValues(t, &o)
}

// optionValues flattens the options into path -> value: numbers as
// decimal integers when they are whole (durations in nanoseconds),
// strings and booleans as themselves. Pointers are followed; functions
// and the flag set are left out.
func optionValues(t *testing.T, o *serveOpts) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() && v.Type() != reflect.TypeFor[*flag.FlagSet]() {
				walk(v.Elem(), path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			out[path] = strconv.FormatInt(v.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			out[path] = strconv.FormatUint(v.Uint(), 10)
		case reflect.Float32, reflect.Float64:
			out[path] = canonical(v.Float())
		case reflect.String:
			out[path] = v.String()
		case reflect.Bool:
			out[path] = strconv.FormatBool(v.Bool())
		case reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		default:
			t.Fatalf("%s: a %s: teach optionValues about it", path, v.Kind())
		}
	}
	walk(reflect.ValueOf(o).Elem(), "serveOpts")
	return out
}

// canonical is how optionValues prints a value of the example.
func canonical(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		if d, err := time.ParseDuration(x); err == nil && x != "" {
			return strconv.FormatInt(int64(d), 10)
		}
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func isZero(v any) bool {
	switch x := v.(type) {
	case int:
		return x == 0
	case float64:
		return x == 0
	case string:
		return x == ""
	}
	return false
}

func ptr[T any](v T) *T { return &v }

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneMap(sub)
		}
		out[k] = v
	}
	return out
}

func setPath(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		m = m[k].(map[string]any)
	}
	m[path[len(path)-1]] = v
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

func TestConfigRules(t *testing.T) {
	path := writeFile(t, "sluice.yaml", "rules: /etc/sluice/rules.yaml\n")
	c, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--rules", "flag.yaml"}} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveCommand.flags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		o := serveOpts{rules: fs.Lookup("rules").Value.String()}
		cfg := server.DefaultConfig()
		o.cfg = &cfg
		if err := c.apply(&o, fs); err != nil {
			t.Fatal(err)
		}
		want := "/etc/sluice/rules.yaml"
		if args != nil {
			want = "flag.yaml" // the flag wins
		}
		if o.rules != want {
			t.Errorf("%q: rules %q, want %q", args, o.rules, want)
		}
	}
}

// TestIngestServerValues: --ingest-server and ingest_server take
// fasthttp or net/http; anything else is a usage error naming both,
// before anything is opened.
func TestIngestServerValues(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	_, errOut, st := sluice(t, "", "serve", "--ingest-server", "nginx", "--listen", "127.0.0.1:0", "--data", data)
	if st != 2 || !strings.Contains(errOut, `--ingest-server "nginx": fasthttp or net/http`) {
		t.Errorf("--ingest-server nginx: status %d: %s", st, errOut)
	}
	cfg := writeFile(t, "sluice.yaml", "ingest_server: apache\n")
	_, errOut, st = sluice(t, "", "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", data)
	if st != 2 || !strings.Contains(errOut, `"apache"`) {
		t.Errorf("ingest_server: apache: status %d: %s", st, errOut)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the data directory was made (%v) before the usage error", err)
	}
}
