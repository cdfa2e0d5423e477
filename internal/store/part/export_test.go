package part

// Exported for tests.
var (
	EndsWithPrefix   = endsWithPrefix
	StartsWithSuffix = startsWithSuffix
)
