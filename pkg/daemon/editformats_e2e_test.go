package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// The edit formats models are trained on, called by the names the models
// use, through a real daemon: codex's apply_patch and Anthropic's
// str_replace_based_edit_tool.
func TestEditFormatsEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "ask" }))
	ws := d.Workspace
	os.WriteFile(filepath.Join(ws, "app.py"), []byte("def greet():\n    print(\"Hi\")\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "old.txt"), []byte("obsolete\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("KEY=secret\n"), 0o644)
	x := newSession(t, d)

	patch := "*** Begin Patch\n*** Add File: docs/hello.txt\n+Hello world\n*** Update File: app.py\n*** Move to: src/main.py\n" +
		"@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello, world!\")\n*** Delete File: old.txt\n*** End Patch"
	args, _ := json.Marshal(map[string]string{"input": patch})

	// The person asked sees every path and the diff of every file.
	var asked *pb.RequiresApproval
	res, _ := x.call("p1", "apply_patch", string(args), func(a *pb.RequiresApproval) *pb.ApprovalDecision {
		asked = a
		return approveOnce(a)
	})
	if !res.GetSuccess() {
		t.Fatalf("apply_patch failed: %v", res.GetError())
	}
	if asked == nil {
		t.Fatal("apply_patch did not ask in ask mode")
	}
	for _, p := range []string{"docs/hello.txt", "app.py", "src/main.py", "old.txt"} {
		if !slices.ContainsFunc(asked.GetEffect().GetWrites(), func(w string) bool { return strings.HasSuffix(w, p) }) {
			t.Errorf("approval writes %q lack %s", asked.GetEffect().GetWrites(), p)
		}
	}
	for _, want := range []string{"+++ b/docs/hello.txt", "--- a/app.py\n+++ b/src/main.py", "+    print(\"Hello, world!\")", "--- a/old.txt\n+++ /dev/null", "-obsolete"} {
		if !strings.Contains(asked.GetEffect().GetDiff(), want) {
			t.Errorf("approval diff lacks %q:\n%s", want, asked.GetEffect().GetDiff())
		}
	}
	if text := res.GetContent()[0].GetText(); !strings.HasPrefix(text, "Success. Updated the following files:\nA docs/hello.txt\nM src/main.py\nD old.txt") {
		t.Errorf("result: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src/main.py")); string(b) != "def greet():\n    print(\"Hello, world!\")\n" {
		t.Errorf("src/main.py = %q", b)
	}

	// A patch that names a sensitive file is denied before anyone is asked.
	args, _ = json.Marshal(map[string]string{"input": "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Update File: .env\n@@\n-KEY=secret\n+KEY=x\n*** End Patch"})
	res, _ = x.call("p2", "apply_patch", string(args))
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Errorf("patch of .env: %v", res.GetError())
	}
	if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err == nil {
		t.Error("a denied patch wrote a file")
	}

	// A patch that does not fit fails with codex's message; nobody is asked.
	args, _ = json.Marshal(map[string]string{"input": "*** Begin Patch\n*** Update File: src/main.py\n@@\n-    print(\"Bye\")\n+x\n*** End Patch"})
	res, _ = x.call("p3", "apply_patch", string(args))
	if res.GetSuccess() || !strings.Contains(res.GetError().GetMessage(), "Failed to find expected lines in src/main.py:\n    print(\"Bye\")") {
		t.Errorf("misfit patch: %v", res.GetError())
	}

	// Anthropic's text editor, by its name.
	res, _ = x.call("e1", "str_replace_based_edit_tool", `{"command":"view","path":"src/main.py"}`, approveOnce)
	if !res.GetSuccess() || !strings.Contains(res.GetContent()[0].GetText(), "     2\t    print(\"Hello, world!\")") {
		t.Fatalf("view: %v %v", res.GetError(), res.GetContent())
	}
	res, _ = x.call("e2", "str_replace_based_edit_tool", `{"command":"str_replace","path":"src/main.py","old_str":"Hello, world!","new_str":"Hello!"}`, approveOnce)
	if !res.GetSuccess() || !strings.Contains(res.GetContent()[0].GetText(), "The file src/main.py has been edited.") {
		t.Fatalf("str_replace: %v %v", res.GetError(), res.GetContent())
	}
	res, _ = x.call("e3", "str_replace_based_edit_tool", `{"command":"undo_edit","path":"src/main.py"}`, approveOnce)
	if !res.GetSuccess() {
		t.Fatalf("undo_edit: %v", res.GetError())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src/main.py")); string(b) != "def greet():\n    print(\"Hello, world!\")\n" {
		t.Errorf("after undo: %q", b)
	}
}
