package query

// known is a memo of a yes-or-no answer: not worked out yet, no, or yes.
// Its zero value is unknown, so a cleared memo asks again.
type known int8

const (
	unknown known = iota
	knownNo
	knownYes
)

// knownOf returns the memo of answer b.
func knownOf(b bool) known {
	if b {
		return knownYes
	}
	return knownNo
}
