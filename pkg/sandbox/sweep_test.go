package sandbox_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// A helper that was asked to stop and does not (here it ignores SIGTERM)
// is swept with its whole tree after the grace period and the margin: a
// grandchild in its process group and one that left it (setsid) are gone
// too, not only the helper.
func TestStopStuckHelperLeavesNoTree(t *testing.T) {
	t.Parallel()
	tok := token(t)
	t.Cleanup(func() {
		for _, pid := range sleepers(tok) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	script := fmt.Sprintf(`trap "" TERM
setsid sleep 100.%[1]s 4>&- &
sleep 101.%[1]s 4>&- &
echo "{\"started\":{\"pid\":$!}}" >&4
exec sleep 102.%[1]s`, tok)
	r := sandbox.Runner{Helper: "/bin/sh", Args: []string{"-c", script}}
	p, err := r.Start(t.Context(), sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Grace: 100 * time.Millisecond}, sandbox.Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, 30*time.Second, "the helper and both grandchildren to run", func() bool { return len(sleepers(tok)) == 3 })
	p.Stop()
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the stuck helper was not ended")
	}
	if e := p.Exit(); e.Err == nil {
		t.Errorf("exit %+v, want the helper's failure", e)
	}
	testenv.Poll(t, 10*time.Second, "the helper's whole tree to be gone", func() bool { return len(sleepers(tok)) == 0 })
}
