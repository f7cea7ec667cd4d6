package sandbox_test

import (
	"testing"

	"github.com/toold/toold/pkg/sandbox"
)

// BoundUnixSockets runs once per sandboxed command (never cached).
func BenchmarkBoundUnixSockets(b *testing.B) {
	keep := []string{b.TempDir()}
	for b.Loop() {
		sandbox.BoundUnixSockets(keep)
	}
}

func BenchmarkRuntimeUnixSockets(b *testing.B) {
	keep := []string{b.TempDir()}
	for b.Loop() {
		sandbox.RuntimeUnixSockets(keep)
	}
}
