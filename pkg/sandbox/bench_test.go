package sandbox_test

import (
	"os"
	"testing"

	"github.com/toold/toold/pkg/sandbox"
)

// BenchmarkHelperTrue starts true under a helper (this small test binary)
// and waits for its tree to end: the helper's own cost.
func BenchmarkHelperTrue(b *testing.B) {
	spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	for b.Loop() {
		p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(b.Context(), spec, sandbox.Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
}
