package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// A request to run outside the sandbox is shown as its own kind, and
// --yes never approves it: without a person toolctl denies it and nothing
// runs (a real toold in YOLO with its default sandbox; the canary is
// outside the workspace).
func TestOutsideSandboxNeedsAPerson(t *testing.T) {
	t.Parallel()
	if err := sandbox.ProbeIsolation(sandbox.Runner{Args: sandbox.TestHelperArgs}); err != nil {
		testenv.Need(t, err, "namespaces for the sandbox")
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	canary := filepath.Join(t.TempDir(), "canary")
	for _, yes := range []bool{true, false} {
		args := []string{"call", "run_command", "command=echo x > " + canary, "outside_sandbox:=true"}
		if yes {
			args = append(args, "--yes")
		}
		r := runAt(t, d.Socket, args...)
		r.check(t, exitFailure, nil, []string{
			"approval needed to run OUTSIDE the sandbox (high risk)",
			"sandbox:  OFF for this call only: exactly the command above, in the workspace root",
			"REJECTED_BY_USER",
		})
		if yes && !strings.Contains(r.stderr, "--yes never approves running a command outside the sandbox") {
			t.Errorf("--yes: %s", r.stderr)
		}
		if _, err := os.Stat(canary); !os.IsNotExist(err) {
			t.Fatalf("the command ran outside the sandbox without a person (--yes %v): %v", yes, err)
		}
	}
}
