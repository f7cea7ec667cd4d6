package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/checkpoint/checkpointtest"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// A conversation mixing edit_file, apply_patch, the text editor and
// sandboxed commands (create, modify in place, append, delete, rename,
// chmod, a new directory tree, a symlink) is rewound through the
// CheckpointService to before its first call: the workspace is back byte
// for byte, modes included. A file a person changed after the
// conversation's last call is a conflict, reported and left alone.
func TestRewindConversation(t *testing.T) {
	ws := t.TempDir()
	seed := map[string]string{
		"src/app.py":  "def greet():\n    print(\"Hi\")\n",
		"notes.md":    "# notes\n",
		"data.txt":    "one\ntwo\n",
		"old/a.txt":   "a\n",
		"old/b/c.txt": "c\n",
		"keep.txt":    "person's file\n",
	}
	for p, s := range seed {
		writeWS(t, filepath.Join(ws, p), s)
	}
	if err := os.Chmod(filepath.Join(ws, "data.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	before := checkpointtest.TreeHash(t, ws)
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = t.TempDir()
	}))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "rw"}}})
	ok := func(id, name, args string) {
		t.Helper()
		res, _ := x.call(id, name, args)
		if !res.GetSuccess() {
			t.Fatalf("%s %s: %v", id, name, res.GetError())
		}
	}
	ok("c1", "edit_file", `{"path":"notes.md","old_string":"# notes","new_string":"# Notes\nmore"}`)
	patch, _ := json.Marshal(map[string]string{"input": "*** Begin Patch\n*** Update File: src/app.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n" +
		"*** Add File: src/new.py\n+x = 1\n*** Delete File: old/a.txt\n*** End Patch"})
	ok("c2", "apply_patch", string(patch))
	ok("c3", "str_replace_based_edit_tool", `{"command":"create","path":"docs/guide.md","file_text":"guide\n"}`)
	ok("c4", "run_command", `{"command":"printf 'THREE' | dd of=data.txt bs=1 seek=4 conv=notrunc 2>/dev/null && echo tail >> data.txt && chmod 755 data.txt && mv src/app.py src/main.py && mkdir -p gen/x/y && echo g > gen/x/y/z.txt && ln -s ../notes.md gen/link && rm -rf old && touch keep.txt.bak"}`)
	ok("c5", "run_command", `{"command":"echo later > keep.txt.bak && rm docs/guide.md && rmdir docs"}`)
	ok("c6", "read_file", `{"path":"notes.md"}`) // reads: not recorded
	if checkpointtest.TreeHash(t, ws) == before {
		t.Fatal("the calls changed nothing")
	}

	ctx := d.AsOperator(context.Background())
	cs := pb.NewCheckpointServiceClient(d.Conn)
	ch, err := cs.Changes(ctx, &pb.ChangesRequest{ConversationId: "rw", Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range ch.GetCalls() {
		ids = append(ids, c.GetCallId())
	}
	if strings.Join(ids, ",") != "c1,c2,c3,c4,c5" {
		t.Fatalf("recorded calls %v", ids)
	}
	if c := ch.GetCalls()[0]; len(c.GetChanges()) != 1 || c.GetChanges()[0].GetPath() != "notes.md" || !strings.Contains(c.GetChanges()[0].GetDiff(), "+# Notes") {
		t.Fatalf("c1's changes: %v", c)
	}
	c4 := map[string]*pb.PathChange{}
	for _, p := range ch.GetCalls()[3].GetChanges() {
		c4[p.GetPath()] = p
	}
	for _, p := range []string{"data.txt", "src/app.py", "src/main.py", "gen/x/y/z.txt", "gen/link", "old/b/c.txt", "old", "keep.txt.bak"} {
		if c4[p] == nil {
			t.Errorf("c4 did not record %s (recorded %v)", p, keys(c4))
		}
	}
	if c4["data.txt"].GetAfter().GetMode() != 0o755 || c4["data.txt"].GetBefore().GetMode() != 0o640 {
		t.Errorf("data.txt modes: %v", c4["data.txt"])
	}
	if _, err := cs.Changes(ctx, &pb.ChangesRequest{ConversationId: "rw", CallId: "c6"}); status.Code(err) != codes.NotFound {
		t.Fatalf("changes of a read: %v", err)
	}

	// A person edits a file the conversation changed last in c5.
	writeWS(t, filepath.Join(ws, "keep.txt.bak"), "the person's edit\n")
	dry, err := cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "rw", CallId: "c1", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.GetApplied() || dry.GetConflicts() != 1 || strings.Join(dry.GetUndoneCallIds(), ",") != "c5,c4,c3,c2,c1" {
		t.Fatalf("dry run: %v", dry)
	}
	rep, err := cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "rw", CallId: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	var conflict *pb.RewindAction
	for _, a := range rep.GetActions() {
		if a.GetConflict() != "" {
			conflict = a
		}
	}
	if rep.GetConflicts() != 1 || conflict.GetPath() != "keep.txt.bak" || conflict.GetDone() {
		t.Fatalf("rewind: %v", rep)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt.bak")); string(b) != "the person's edit\n" {
		t.Fatalf("the person's edit was overwritten: %q", b)
	}
	// The person's choice: their file goes too.
	if rep, err = cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "rw", CallId: "c1", Force: true}); err != nil || rep.GetConflicts() != 0 {
		t.Fatalf("forced rewind: %v %v", rep, err)
	}
	if got := checkpointtest.TreeHash(t, ws); got != before {
		t.Fatalf("after the rewind the workspace differs:\n%s\nwant\n%s", got, before)
	}
	// The rewound calls' records are gone; asking again is NOT_FOUND.
	if _, err := cs.Rewind(ctx, &pb.RewindRequest{ConversationId: "rw", CallId: "c1"}); status.Code(err) != codes.NotFound {
		t.Fatalf("rewind again: %v", err)
	}
	// Another conversation's secret, or none, reads nothing.
	if _, err := cs.Changes(context.Background(), &pb.ChangesRequest{ConversationId: "rw"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("without a credential: %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func writeWS(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
