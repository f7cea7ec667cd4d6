package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
		// The directory holding the secret cannot be moved (it is a mount
		// point in every view); where it could be, the mask must follow.
		res, _ = x.call(fmt.Sprint("mv", i), "run_command", jsonArgs(map[string]any{"command": fmt.Sprintf("mv %s moved%d && echo MOVED || echo REFUSED", dir, i)}))
		if out := text(res); !strings.Contains(out, "MOVED") && !strings.Contains(out, "REFUSED") {
			t.Fatalf("mv: %s", out)
		}
		res, _ = x.call(fmt.Sprint("leak", i), "run_command", jsonArgs(map[string]any{"command": fmt.Sprintf("n=nv; cat moved%d/.e$n %s/.e$n; echo END", i, dir)}))
		if out := text(res); strings.Contains(out, secret) || !strings.Contains(out, "END") {
			t.Fatalf("a renamed secret was read by the next command:\n%s", out)
		}
	}

	// A person edits a secret while a command runs: the command's record
	// holds the change (a rewind puts the old secret back), but no diff
	// shows either content: the conversation's client would hand it to
	// the model, which could read neither.
	edited := "SECRET-EDITED-" + randomHex(t, 8)
	done := make(chan string, 1)
	go func() {
		res, _ := x.call("w", "run_command", jsonArgs(map[string]any{"command": "touch started; while [ ! -e go ]; do sleep 0.05; done; rm -f started go; echo WAITED", "timeout": 60}))
		done <- text(res)
	}()
	eventually(t, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	env1 := filepath.Join(ws, "cfg1", ".env")
	if _, err := os.Stat(env1); err != nil {
		env1 = filepath.Join(ws, "moved1", ".env")
	}
	if err := os.WriteFile(env1, []byte("API_KEY="+edited+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
	if out := <-done; !strings.Contains(out, "WAITED") {
		t.Fatalf("w: %s", out)
	}
	ctx := d.AsOperator(context.Background())
	cs := pb.NewCheckpointServiceClient(d.Conn)
	ch, err := cs.Changes(ctx, &pb.ChangesRequest{ConversationId: "leaker", CallId: "w", Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, c := range ch.GetCalls() {
		for _, p := range c.GetChanges() {
			if strings.HasSuffix(p.GetPath(), "/.env") {
				changed = true
			}
			if strings.Contains(p.GetDiff(), secret) || strings.Contains(p.GetDiff(), edited) {
				t.Fatalf("a checkpoint's diff shows a secret the command could not read: %s\n%s", p.GetPath(), p.GetDiff())
			}
		}
	}
	if !changed {
		t.Fatalf("the command's record lacks the secret's change: %v", ch)
	}
	if _, err := cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "leaker", CallId: "w"}); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if b, err := os.ReadFile(env1); err != nil || string(b) != "API_KEY="+secret+"\n" {
		t.Errorf("after the rewind %s: %q, %v", env1, b, err)
	}
}

// Issue 25, checkpoints and rewind attacked by a command: it plants links to
// a canary directory and a canary HOME's key, a hard link to a file outside
// (refused by the kernel in the sandbox), a FIFO and a 30 GB sparse file,
// then — from another conversation, in the background — swaps a directory
// the rewind restores into with a symlink to the canary directory, over and
// over, while the first conversation is rewound (forced) again and again.
// Nothing outside the workspace is written, removed or re-moded, no diff
// shows the key, and toold answers throughout (the FIFO hangs nothing, the
// sparse file is not read).
func TestAttackCheckpointsAndRewindEndToEnd(t *testing.T) {
	sandboxed(t)
	home := t.TempDir()
	key := "SECRET-SSH-" + randomHex(t, 8)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte(key+"\n"), 0o600)
	t.Setenv("HOME", home)
	canary := t.TempDir()
	keep := filepath.Join(canary, "keep")
	os.WriteFile(keep, []byte("canary\n"), 0o644)
	canaryState := snapshot(t, canary)

	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "atk"}}})
	run := func(x *session, id, cmd string, more map[string]any) string {
		t.Helper()
		args := map[string]any{"command": cmd, "timeout": 60}
		for k, v := range more {
			args[k] = v
		}
		res, _ := x.call(id, "run_command", jsonArgs(args))
		return text(res)
	}
	if out := run(x, "c1", "mkdir dir && echo inner > dir/keep && echo v1 > f.txt && chmod 600 f.txt && echo OK", nil); !strings.Contains(out, "OK") {
		t.Fatalf("c1: %s", out)
	}
	out := run(x, "c2", fmt.Sprintf(`rm -rf dir && ln -s %[1]s dir && echo v2 > f.txt && chmod 644 f.txt
s=ssh; ln -s %[2]s/.$s/id_ed25519 key; ln -s %[1]s/keep keep-link; ln -s %[2]s home
ln %[1]s/keep hard 2>&1 || echo NO-HARDLINK
mkfifo fifo; truncate -s 30G big; echo END`, canary, home), nil)
	if !strings.Contains(out, "END") {
		t.Fatalf("c2: %s", out)
	}
	if !strings.Contains(out, "NO-HARDLINK") {
		t.Errorf("a command linked a file outside the workspace into it: %s", out)
	}
	ctx := d.AsOperator(context.Background())
	cs := pb.NewCheckpointServiceClient(d.Conn)
	ch, err := cs.Changes(ctx, &pb.ChangesRequest{ConversationId: "atk", Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := ch.String(); strings.Contains(s, key) || strings.Contains(s, "canary\\n") {
		t.Fatalf("a checkpoint captured what is outside the workspace:\n%s", s)
	}

	// The swapper, in another conversation, in the background.
	y := newSession(t, d)
	y.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "swapper"}}})
	swap := fmt.Sprintf(`end=$((SECONDS+8)); while [ $SECONDS -lt $end ]; do rm -f dir 2>/dev/null; rm -rf dir 2>/dev/null; ln -s %[1]s dir 2>/dev/null; rm -f f.txt; ln -s %[1]s/keep f.txt 2>/dev/null; done; echo SWAPPED`, canary)
	res, _ := y.call("bg", "run_command", jsonArgs(map[string]any{"command": swap, "is_background": true}))
	pid, _ := res.GetStructured().AsMap()["process_id"].(string)
	if pid == "" {
		t.Fatalf("background: %v", res)
	}
	// Each round: a call removes dir/keep, and a forced rewind of it
	// makes dir and writes dir/keep again, while dir keeps turning into a
	// symlink to the canary directory.
	rewound, refused := 0, 0
	for i := range 12 {
		run(x, fmt.Sprint("mk", i), "rm -f dir; mkdir -p dir; echo inner > dir/keep; echo v > f.txt", nil)
		run(x, fmt.Sprint("rm", i), "rm -rf dir f.txt", nil)
		rep, err := cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "atk", CallId: fmt.Sprint("rm", i), Force: true})
		if err != nil && status.Code(err) != codes.NotFound {
			t.Fatalf("rewind %d: %v", i, err)
		}
		for _, a := range rep.GetActions() {
			if a.GetDone() {
				rewound++
			} else if a.GetError() != "" {
				refused++
			}
		}
	}
	t.Logf("paths restored: %d; refused: %d", rewound, refused)
	if rewound == 0 {
		t.Fatal("no rewind restored anything: the attack proves nothing")
	}
	r, _ := y.call("wait", "wait", mustJSON(t, map[string]any{"process_id": pid, "timeout": 60}))
	r2, _ := y.call("out", "get_output", mustJSON(t, map[string]any{"process_id": pid}))
	if !strings.Contains(text(r)+text(r2), "SWAPPED") {
		t.Fatalf("the swapper did not run: %s %s", text(r), text(r2))
	}
	if got := snapshot(t, canary); got != canaryState {
		t.Fatalf("the rewind changed the canary directory outside the workspace:\n%s\nwas\n%s", got, canaryState)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "canary\n" {
		t.Fatalf("the canary file outside the workspace changed: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".ssh", "id_ed25519")); err != nil || string(b) != key+"\n" {
		t.Fatalf("the canary key changed: %q %v", b, err)
	}
	// toold still answers, and the FIFO did not hang a later record.
	if out := run(x, "c3", "echo still", nil); !strings.Contains(out, "still") {
		t.Fatalf("after the attack: %s", out)
	}
}

// The rename race: a background command renames a secret's directory back
// and forth without pause while the same conversation's commands start one
// after another and read the secret at both of its places. Every command's
// view is built from a walk made a moment before it; the secret must be
// masked wherever it is when the command reads it.
func TestRenameRaceSecretStaysMaskedEndToEnd(t *testing.T) {
	sandboxed(t)
	ws := t.TempDir()
	secret := "SECRET-RACE-" + randomHex(t, 8)
	os.MkdirAll(filepath.Join(ws, "cfg"), 0o755)
	os.WriteFile(filepath.Join(ws, "cfg", ".env"), []byte("API_KEY="+secret+"\n"), 0o600)
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := newSession(t, d)
	res, _ := x.call("bg", "run_command", jsonArgs(map[string]any{"command": `end=$((SECONDS+10)); while [ $SECONDS -lt $end ]; do mv cfg alt 2>/dev/null; mv alt cfg 2>/dev/null; done; echo SWAPPED`, "is_background": true}))
	pid, _ := res.GetStructured().AsMap()["process_id"].(string)
	if pid == "" {
		t.Fatalf("background: %v", res)
	}
	for i := range 25 {
		res, _ := x.call(fmt.Sprint("r", i), "run_command", jsonArgs(map[string]any{"command": `n=nv; for k in 1 2 3 4 5 6 7 8 9 10; do cat cfg/.e$n alt/.e$n 2>/dev/null; done; echo END`}))
		if out := text(res); strings.Contains(out, secret) {
			t.Fatalf("round %d: a secret renamed as the command started was read:\n%s", i, out)
		}
	}
	r, _ := x.call("wait", "wait", mustJSON(t, map[string]any{"process_id": pid, "timeout": 60}))
	r2, _ := x.call("out", "get_output", mustJSON(t, map[string]any{"process_id": pid}))
	if !strings.Contains(text(r)+text(r2), "SWAPPED") {
		t.Fatalf("the renamer did not run: %s %s", text(r), text(r2))
	}
}
