package sandbox_test

import (
	"errors"
	"testing"

	"github.com/toold/toold/pkg/sandbox"
)

// TestProbeIsolationIn probes in a shared network namespace, as toold does
// at start, and checks that the probe fails closed: a helper that cannot
// run the probe's command makes it fail, with or without the namespace.
func TestProbeIsolationIn(t *testing.T) {
	isolation(t)
	ns, err := sandbox.OpenNetns("")
	if err != nil {
		t.Fatalf("OpenNetns: %v", err)
	}
	defer ns.Close()
	if err := sandbox.ProbeIsolationIn(sandbox.Runner{Args: sandbox.TestHelperArgs}, ns); err != nil {
		t.Fatalf("the probe in the shared namespace failed where the probe in its own works: %v", err)
	}
	// Not a helper: the probe must not pass.
	for _, in := range []*sandbox.Netns{ns, nil} {
		err := sandbox.ProbeIsolationIn(sandbox.Runner{Helper: "/bin/true"}, in)
		if err == nil {
			t.Fatalf("the probe passed through /bin/true (netns %v)", in != nil)
		}
		if !errors.Is(err, sandbox.ErrNotHelper) {
			t.Errorf("the probe through /bin/true: %v, want ErrNotHelper", err)
		}
	}
}
