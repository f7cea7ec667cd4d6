package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// A secret in the workspace (.env, masked in the sandbox) whose directory a
// command renames: the mask moves with the file in that command's view, but
// the next command must find it masked at its new place too — the masks
// are those of the workspace as the command starts, not of a walk made
// before the rename.
func TestRenamedSecretStaysMaskedEndToEnd(t *testing.T) {
	sandboxed(t)
	ws := t.TempDir()
	secret := "SECRET-ENV-" + randomHex(t, 8)
	for i := range 3 {
		dir := filepath.Join(ws, fmt.Sprintf("cfg%d", i))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, ".env"), []byte("API_KEY="+secret+"\n"), 0o600)
	}
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "leaker"}}})
	for i := range 3 {
		dir := fmt.Sprintf("cfg%d", i)
		// A command reads it: masked (and toold has just walked the
		// workspace for secrets).
		res, _ := x.call(fmt.Sprint("read", i), "run_command", jsonArgs(map[string]any{"command": "n=nv; cat " + dir + "/.e$n; echo END"}))
		if out := text(res); strings.Contains(out, secret) || !strings.Contains(out, "END") {
			t.Fatalf("the secret was readable before the rename, or the command did not run:\n%s", out)
		}
		res, _ = x.call(fmt.Sprint("mv", i), "run_command", jsonArgs(map[string]any{"command": fmt.Sprintf("mv %s moved%d && echo MOVED", dir, i)}))
		if out := text(res); !strings.Contains(out, "MOVED") {
			t.Fatalf("mv: %s", out)
		}
		res, _ = x.call(fmt.Sprint("leak", i), "run_command", jsonArgs(map[string]any{"command": fmt.Sprintf("n=nv; cat moved%d/.e$n; echo END", i)}))
		if out := text(res); strings.Contains(out, secret) {
			t.Fatalf("a renamed secret was read by the next command:\n%s", out)
		}
	}
	// The moves' records hold the secret (a rewind puts it back), but no
	// diff shows it: the conversation's client would hand it to the model.
	ctx := d.AsOperator(context.Background())
	cs := pb.NewCheckpointServiceClient(d.Conn)
	ch, err := cs.Changes(ctx, &pb.ChangesRequest{ConversationId: "leaker", Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	moves := 0
	for _, c := range ch.GetCalls() {
		for _, p := range c.GetChanges() {
			if strings.HasSuffix(p.GetPath(), "/.env") {
				moves++
			}
			if strings.Contains(p.GetDiff(), secret) {
				t.Fatalf("a checkpoint's diff shows a secret the command could not read: %s\n%s", p.GetPath(), p.GetDiff())
			}
		}
	}
	if moves != 6 {
		t.Fatalf("the moves' records: %d changes of .env files, want 6 (3 removed, 3 created): %v", moves, ch)
	}
	// Rewinding the second and third moves puts their secrets back.
	if _, err := cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "leaker", CallId: "mv1"}); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	for i := range 3 {
		want := fmt.Sprintf("cfg%d/.env", i)
		if i == 0 {
			want = "moved0/.env" // before the rewound calls
		}
		if b, err := os.ReadFile(filepath.Join(ws, want)); err != nil || string(b) != "API_KEY="+secret+"\n" {
			t.Errorf("after the rewind %s: %q, %v", want, b, err)
		}
	}
}
