// A closed-loop HTTP(S) load generator for hack/bench/adapter.sh: the Go standard library only,
// so it builds in seconds with no downloads.
module github.com/ferrocrane/ferrocrane/hack/bench/loadgen

go 1.26.0
