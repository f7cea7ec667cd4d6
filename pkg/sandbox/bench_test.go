package sandbox_test

import (
	"os"
	"testing"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
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

// BenchmarkCgroupTrue starts true in a cgroup of its own (no helper) and
// waits for it to end: the same work as BenchmarkHelperTrue in the other
// supervision mode, compared in the same run (docs/terminal.md).
func BenchmarkCgroupTrue(b *testing.B) {
	cg, err := sandbox.OpenCgroups(sandbox.CgroupConfig{
		Runner: sandbox.Runner{Args: sandbox.TestHelperArgs},
		Probe:  sandbox.Spec{Path: "/bin/true", Args: []string{"true"}},
	})
	testenv.Need(b, err, "cgroups v2 with a delegated subtree")
	defer cg.Close()
	spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	for b.Loop() {
		p, err := cg.Start(b.Context(), spec, sandbox.Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
}
