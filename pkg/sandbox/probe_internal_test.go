package sandbox

import (
	"errors"
	"testing"
	"time"
)

// TestProbeUnfinishedIsNotARefusal: a probe that does not finish in its
// time (a helper that never answers stands in for a machine too loaded to
// start one) fails with ErrProbeUnfinished, which toold does not take for
// the kernel refusing namespaces; a helper that fails at once is not
// ErrProbeUnfinished.
func TestProbeUnfinishedIsNotARefusal(t *testing.T) {
	err := probeIsolationIn(Runner{Helper: "/bin/sleep", Args: []string{"30"}}, nil, 300*time.Millisecond)
	if !errors.Is(err, ErrProbeUnfinished) {
		t.Fatalf("a helper that never answered: %v, want ErrProbeUnfinished", err)
	}
	err = probeIsolationIn(Runner{Helper: "/bin/true"}, nil, ProbeTimeout)
	if err == nil || errors.Is(err, ErrProbeUnfinished) {
		t.Fatalf("a helper that failed at once: %v, want a refusal (not ErrProbeUnfinished)", err)
	}
}
