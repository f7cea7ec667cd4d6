package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// TestCheckedAtUseEndToEnd swaps what a call names while its approval waits
// (the person approves the harmless file; by then it is a symlink to a
// secret or a git hook, or a hard link to a key) against a real daemon: the
// call ends DENIED and the canaries are neither read nor changed.
func TestCheckedAtUseEndToEnd(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "ask" }))
	ws := d.Workspace
	canaries := map[string]string{
		filepath.Join(ws, ".env"):                  "ENV-CANARY\n",
		filepath.Join(ws, ".git/hooks/pre-commit"): "#!/bin/sh\necho HOOK-CANARY\n",
		filepath.Join(home, ".ssh/id_rsa"):         "SSH-CANARY\n",
	}
	for p, c := range canaries {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	x := newSession(t, d)
	// swapThenApprove turns name into a symlink to target while the
	// approval waits, then approves.
	swapThenApprove := func(name, target string) answer {
		return func(a *pb.RequiresApproval) *pb.ApprovalDecision {
			p := filepath.Join(ws, name)
			os.Remove(p)
			if err := os.Symlink(target, p); err != nil {
				t.Error(err)
			}
			return approveOnce(a)
		}
	}
	linkThenApprove := func(name, target string) answer {
		return func(a *pb.RequiresApproval) *pb.ApprovalDecision {
			p := filepath.Join(ws, name)
			os.Remove(p)
			if err := os.Link(target, p); err != nil {
				t.Error(err)
			}
			return approveOnce(a)
		}
	}
	tests := []struct {
		name, tool string
		args       map[string]any
		ans        answer
	}{
		{"write swapped for a link to .env", "write_file", map[string]any{"path": "a.txt", "content": "pwned"}, swapThenApprove("a.txt", ".env")},
		{"write swapped for a link to a git hook", "write_file", map[string]any{"path": "b.txt", "content": "pwned"}, swapThenApprove("b.txt", ".git/hooks/pre-commit")},
		{"edit swapped for a link to .env", "edit_file", map[string]any{"path": "c.txt", "old_string": "CANARY", "new_string": "pwned"}, swapThenApprove("c.txt", ".env")},
		{"read swapped for a link to .env", "read_file", map[string]any{"path": "d.txt"}, swapThenApprove("d.txt", ".env")},
		{"read swapped for a hard link to ~/.ssh/id_rsa", "read_file", map[string]any{"path": "e.txt"}, linkThenApprove("e.txt", filepath.Join(home, ".ssh/id_rsa"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x.t = t
			name := tt.args["path"].(string)
			if err := os.WriteFile(filepath.Join(ws, name), []byte("harmless CANARY\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(tt.args)
			res, evs := x.call(tt.name, tt.tool, string(args), tt.ans)
			asked := false
			for _, e := range evs {
				asked = asked || e.GetRequiresApproval() != nil
			}
			if !asked || res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
				t.Fatalf("asked %v, got %v: %s", asked, res.GetError().GetCode(), res.GetError().GetMessage())
			}
			for _, c := range res.GetContent() {
				for _, m := range []string{"ENV-CANARY", "HOOK-CANARY", "SSH-CANARY"} {
					if strings.Contains(c.GetText(), m) {
						t.Errorf("the result shows %s", m)
					}
				}
			}
			for p, c := range canaries {
				if b, err := os.ReadFile(p); err != nil || string(b) != c {
					t.Errorf("%s changed: %q, %v", p, b, err)
				}
			}
		})
	}
}
