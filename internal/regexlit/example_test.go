package regexlit_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/regexlit"
)

func ExampleParse() {
	for _, src := range []string{"error|fatal|panic", "(?i)timeout", ".*user=(alice|bob).*denied", "(?i)warn(ing)?:"} {
		p, err := regexlit.Parse(src, false)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(src, "->", p.Groups, "exact:", p.Exact)
	}
	p, _ := regexlit.Parse("info|warn", true)
	fmt.Println("anchored info|warn -> one of", p.Equal, "whole:", p.Whole)
	// Output:
	// error|fatal|panic -> [["error" "fatal" "panic"]] exact: true
	// (?i)timeout -> [[(?i)"timeout"]] exact: true
	// .*user=(alice|bob).*denied -> [["user=alice" "user=bob"] ["denied"]] exact: false
	// (?i)warn(ing)?: -> [[(?i)"warning:" (?i)"warn:"]] exact: true
	// anchored info|warn -> one of ["info" "warn"] whole: true
}
