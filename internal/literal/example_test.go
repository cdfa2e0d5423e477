package literal_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/literal"
)

func ExampleSet() {
	s := literal.NewSet([][]byte{[]byte("timeout"), []byte("refused"), []byte("reset by peer")}, true)
	for _, line := range []string{"GET /users 200", "dial tcp: connection REFUSED", "read: connection reset by peer"} {
		fmt.Println(s.Match([]byte(line)), line)
	}
	// Output:
	// false GET /users 200
	// true dial tcp: connection REFUSED
	// true read: connection reset by peer
}
