module github.com/sluicelog/sluice

go 1.26.8

require (
	github.com/klauspost/compress v1.20.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
)
