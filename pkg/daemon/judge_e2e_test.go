package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// In the default configuration commands run in the sandbox and AUTO runs
// what the judge finds no danger in without asking — a real agent's reads,
// scripts and inline Python — while a dangerous class (git push) still
// asks and shows exactly what would run. What AUTO now lets through
// unasked is held by the kernel: an inline program that deletes a canary
// outside the workspace and reads a key in HOME runs, and neither effect
// happens.
func TestAutoInTheSandboxEndToEnd(t *testing.T) {
	sandboxed(t)
	requireTool(t, "python3")
	home := t.TempDir()
	key := filepath.Join(home, ".ssh", "id_ed25519")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte(sandboxCanary+"\n"), 0o600)
	t.Setenv("HOME", home)
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	os.WriteFile(keep, []byte("keep\n"), 0o644)

	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "auto" }))
	os.WriteFile(filepath.Join(d.Workspace, "main.py"), []byte("print('main')\n"), 0o644)
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "auto-sandbox"}}})
	for i, line := range []string{
		"ls -la && sed -n '1p' main.py && grep -n main main.py",
		"python3 -c 'print(6*7)'",
		"cat > t.py <<'EOF'\nprint('from', 'script')\nEOF\npython3 t.py",
		"find . -name '*.py' | xargs wc -l",
	} {
		// No answer: an approval request fails the test.
		res, _ := x.call(string(rune('a'+i)), "run_command", commandArgs(line, nil))
		if !res.GetSuccess() {
			t.Fatalf("%q: %v", line, res)
		}
	}
	// The kernel holds what the judge no longer asks about.
	attack := "python3 -c 'import os,shutil; shutil.rmtree(\"" + outside + "\", ignore_errors=True); print(open(os.path.expanduser(\"~/.ssh/id_ed25519\")).read())'"
	res, _ := x.call("attack", "run_command", commandArgs(attack, nil))
	if strings.Contains(textOf(res), sandboxCanary) {
		t.Errorf("the key in HOME was read: %v", res)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the canary outside the workspace is gone: %v", err)
	}
	// A dangerous class still asks, showing what runs.
	var shown []*pb.RequiresApproval
	res, _ = x.call("push", "run_command", commandArgs("git push origin main", nil), askedAndRefused(&shown))
	if len(shown) != 1 || res.GetSuccess() || !strings.Contains(shown[0].GetReason(), "publishes or pushes") {
		t.Fatalf("git push: asked %d times (%v), result %v", len(shown), shown, res)
	}
}
