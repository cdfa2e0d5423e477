package multiline_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/multiline"
	"github.com/sluicelog/sluice/internal/parse/text"
	"github.com/sluicelog/sluice/internal/record"
)

func Example() {
	j, err := multiline.New(text.Parser{}, multiline.Config{})
	if err != nil {
		panic(err)
	}
	var sp lines.Splitter
	bl := record.NewBuilder(record.DefaultConfig())
	b := &record.Batch{Data: []byte("2026-01-15 08:00:00,123 ERROR boom\n" +
		"java.lang.IllegalStateException: boom\n" +
		"\tat com.example.App.main(App.java:10)\n" +
		"2026-01-15 08:00:01,000 INFO recovered\n")}
	bl.Start(b)
	// Not final: the last group may go on in the next buffer, so it is
	// left unconsumed; the caller carries b.Data[n:] over. At the end of
	// the input, Run with final set emits the last group.
	n := j.Run(&sp, bl, false)
	fmt.Printf("consumed %d of %d bytes, %d record\n", n, len(b.Data), len(b.Records))
	fmt.Printf("%q\n", b.Bytes(b.Records[0].Line))
	// Output:
	// consumed 111 of 150 bytes, 1 record
	// "2026-01-15 08:00:00,123 ERROR boom\njava.lang.IllegalStateException: boom\n\tat com.example.App.main(App.java:10)"
}
