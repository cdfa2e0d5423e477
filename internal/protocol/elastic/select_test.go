package elastic

import (
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// TestAppendBulkSkipsDropped: a dropped record (record.Batch.Drop) has no
// action or document in the bulk body; the kept ones keep their order.
func TestAppendBulkSkipsDropped(t *testing.T) {
	p := newPushBatch()
	app := record.Labels{{Name: "app", Value: "a"}}
	for _, line := range []string{"zero", "one", "two", "three"} {
		p.add(t, app, 1_768_464_000_000_000_000, line)
	}
	p.b.Drop(1)
	p.b.Drop(3)
	var e Encoder
	got := string(e.AppendBulk(nil, &p.b, "logs"))
	doc := func(msg string) string {
		return `{"create":{"_index":"logs"}}` + "\n" + `{"@timestamp":"2026-01-15T08:00:00.000000000Z","message":"` + msg + `","app":"a"}` + "\n"
	}
	if want := doc("zero") + doc("two"); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, "one") || strings.Contains(got, "three") {
		t.Errorf("a dropped record is in the body:\n%s", got)
	}
}
