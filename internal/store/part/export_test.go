package part

// Exported for tests.
var (
	EndsWithPrefix   = endsWithPrefix
	StartsWithSuffix = startsWithSuffix
)

var GramsMayHold = gramsMayHold

// GramFilter returns the gram filter of values, or nil when they get none.
func GramFilter(values ...[]byte) []byte {
	var s gramSet
	for _, v := range values {
		s.add(v)
	}
	f, ok := s.appendFilter(nil)
	if !ok {
		return nil
	}
	return f
}

// Plain returns opts with the writer's fast paths turned off, to check
// them against the plain paths.
func Plain(opts WriterOptions) WriterOptions {
	opts.plain = true
	return opts
}

// TokenFilter returns the token filter a block whose lines hold the
// tokens would get.
func TokenFilter(tokens ...[]byte) Filter {
	var s tokenSet
	for _, t := range tokens {
		s.add(TokenHash(t))
	}
	return Filter(s.appendFilter(nil))
}

// PlainCounts makes b count and select rows by the plain loops, not
// their fast paths, to check the fast paths against.
func (b *Block) PlainCounts() { b.lm.plain = true }
