package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluicelog/sluice/"

// allowed lists, for each package (or package prefix ending in "/"), the
// sluice packages it may import. Imports point one way, down: parsers know
// nothing of storage, the record model knows nothing of formats. A package
// missing here may import nothing of sluice.
var allowed = map[string][]string{
	"cmd/sluice":               {"internal/"},
	"internal/record":          {"internal/timestamp"},
	"internal/parse":           {"internal/parse/", "internal/record", "internal/timestamp"},
	"internal/parse/lines":     {"internal/record"},
	"internal/parse/parsetest": {"internal/parse/lines", "internal/record"},
	"internal/parse/":          {"internal/record", "internal/timestamp", "internal/parse/lines", "internal/parse/swar"},
	// Protocols are wire codecs both ways: they turn a body into batches
	// and batches into a body; they know no storage.
	"internal/protocol/": {"internal/parse", "internal/parse/", "internal/record", "internal/timestamp"},
	// OTLP becomes a Loki push, as in Loki's distributor: Loki's limits
	// and discovery apply to it.
	"internal/protocol/otlp": {"internal/protocol/loki", "internal/record"},
	// The file loader, a source, hands batches to a flow Sink's two steps.
	"internal/source/file": {"internal/flow", "internal/parse", "internal/parse/", "internal/record"},
	// The flow runs admission, counting and the write of every batch;
	// it knows no protocol and no storage, only its Sink.
	"internal/flow": {"internal/record"},
	// A sink is one more implementation of the flow's Sink: the store's
	// adapter knows the store and no protocol.
	"internal/sink/store": {"internal/flow", "internal/record", "internal/store"},
	// The sink runtime follows the WAL with a cursor, decodes its records
	// and filters them with a LogQL selector; it gates the flow for the
	// block policy. Destinations know the runtime and the WAL's positions.
	"internal/sink":          {"internal/flow", "internal/logql", "internal/record", "internal/rows", "internal/timestamp", "internal/wal", "internal/vfs"},
	"internal/sink/postgres": {"internal/sink", "internal/wal"},
	"internal/sink/file":     {"internal/sink", "internal/wal", "internal/record", "internal/vfs"},
	// Push destinations encode with their protocol's codec (the encode
	// side of what ingest decodes).
	"internal/sink/loki":    {"internal/sink", "internal/wal", "internal/record", "internal/protocol/loki"},
	"internal/sink/elastic": {"internal/sink", "internal/wal", "internal/record", "internal/protocol/elastic"},
	// Starts a private PostgreSQL for tests: knows nothing of sluice.
	"internal/sink/postgres/pgtest": {},
	"internal/sink/kafka":           {"internal/sink", "internal/wal", "internal/record"},
	"internal/sink/kafka/kafkatest": {},
	// What the sinks' tests share: a WAL written as ingest writes it.
	"internal/sink/sinktest": {"internal/parse", "internal/record", "internal/rows", "internal/wal"},
	// The server wires protocols to the store, and serves the rules file
	// (GET and PUT /api/v1/rules: it loads and swaps the rule set).
	"internal/server": {"internal/flow", "internal/protocol/", "internal/sink/", "internal/parse", "internal/record", "internal/store", "internal/vfs", "internal/query", "internal/logql", "internal/rules"},
	// The query engine reads the store through its snapshot; the language
	// knows nothing of either.
	"internal/query": {"internal/logql", "internal/record", "internal/stage", "internal/store", "internal/rows", "internal/store/part", "internal/literal", "internal/pattern", "internal/regexlit"},
	// The pipeline stages know rows as a line, a time and labels: queries
	// and rules run the same stages, so they know no store or engine.
	"internal/stage": {"internal/logql", "internal/record", "internal/literal", "internal/regexlit", "internal/regexscan"},
	// The rule stage compiles LogQL with the query's stages and changes
	// batches in place: it knows no store, protocol or flow.
	"internal/rules": {"internal/logql", "internal/record", "internal/stage", "internal/literal", "internal/regexlit", "internal/regexscan", "internal/vfs"},
	// The pattern miner takes lines and times: it knows no query or store.
	"internal/pattern": {},
	// The multi-literal matcher takes bytes: it knows no query, store or
	// record (the rules engine will use it too).
	"internal/literal": {},
	// The regexp analysis takes a regexp's syntax and returns literals,
	// which it searches with the literal matcher.
	"internal/regexlit": {"internal/literal"},
	// The chain matcher takes an expression and bytes: a leaf.
	"internal/regexscan": {},
	// The durable encoding of a batch (the WAL's payload, the head's rows):
	// sinks, sources and the cluster carry it, so it knows no store.
	"internal/rows": {"internal/record", "internal/bin"},
	// Bounds-checked varint reading for every binary format: a leaf.
	"internal/bin": {},
	// The WAL stores opaque bytes: it never decodes what it carries.
	"internal/wal": {"internal/vfs"},
	// The store owns the head, parts and their indexes; it knows records
	// but no input format.
	"internal/store":  {"internal/store/", "internal/record", "internal/rows", "internal/bin", "internal/timestamp", "internal/wal", "internal/vfs"},
	"internal/store/": {"internal/store/", "internal/record", "internal/rows", "internal/bin", "internal/timestamp", "internal/vfs", "internal/literal"},
	// The SDK is public: programs import it, so it imports nothing of
	// sluice (its wire formats are written anew).
	"sdk": {},
	// A load program of the benchmarks: a user of the public SDK, nothing else.
	"bench/sdkload": {"sdk"},
	// bench/ab.sh's side: one question over a store, in-process, as the
	// server's query handler asks it.
	"bench/querycpu": {"internal/query", "internal/store"},
	// The bare side of bench/sink-pg.sh: the sink's rows, built with sluice's
	// own parser and record code, copied into PostgreSQL without sluice.
	"bench/pgcopy": {"internal/parse", "internal/record", "internal/rows", "internal/sink", "internal/wal"},
	// The bare side of bench/sink-kafka.sh: the Kafka sink's records, built
	// with sluice's parser, and its sink mode, sluice's own sink from a WAL.
	"bench/kafkaproduce": {"internal/parse", "internal/record", "internal/rows", "internal/sink", "internal/sink/kafka", "internal/wal"},
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		rules, ok := allowed[pkg]
		if !ok {
			for prefix, r := range allowed {
				if strings.HasSuffix(prefix, "/") && strings.HasPrefix(pkg, prefix) {
					rules = r
				}
			}
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !permitted(imp, rules) {
				t.Errorf("%s imports %s, which the architecture forbids (see allowed in %s)", pkg, imp, "internal/imports_test.go")
			}
		}
	}
}

func permitted(imp string, rules []string) bool {
	for _, r := range rules {
		if imp == r || (strings.HasSuffix(r, "/") && strings.HasPrefix(imp, r)) {
			return true
		}
	}
	return false
}
