package dialect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/dialect"
	"github.com/toold/toold/pkg/workspace"
)

// runIn does with one call what the executor does: resolve it in the
// dialect for the conversation, prepare, run the tool, shape the result.
func runIn(t *testing.T, reg *tools.Registry, conv, d, name, argsJSON string) (string, error) {
	t.Helper()
	args, err := tools.DecodeArguments(argsJSON)
	if err != nil {
		t.Fatal(err)
	}
	target, err := reg.ResolveCall(conv, d, name, args)
	if err != nil {
		return "", err
	}
	if _, err := target.Prepare(args); err != nil {
		return "", err
	}
	call := &tools.Call{ID: name, ConversationID: conv, Tool: target.ToolName, Operation: target.Operation, Args: args}
	target.Tool.Describe(call)
	res, err := target.Tool.Run(context.Background(), call, &tools.Sink{})
	res, err = target.Shape(res, err)
	if err != nil {
		return "", err
	}
	return res.Text, nil
}

func workspaceRegistry(t *testing.T) (*tools.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := tools.NewRegistry()
	if err := reg.Register(daemon.BuiltinTools(ws, tools.Limits{}.WithDefaults(), authz.Capabilities{}, nil, nil, daemon.MoreOptions{})...); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterDialect(dialect.All()...); err != nil {
		t.Fatal(err)
	}
	return reg, dir
}

// SWE-agent's open-file window runs as SWE-agent runs it, per
// conversation: the calls of SWE-agent's own demonstration trajectory
// (trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867
// __function_calling_replace__install-1 at
// SWE-agent/SWE-agent@3ea751c087f32b16e039a2233dd6eefecef325d5), on a file
// of the same length (1997 lines), answer with the window SWE-agent
// printed there: the header, "(1456 more lines above)", lines 1457-1556 as
// "N:text", "(441 more lines below)".
func TestSWEAgentWindow(t *testing.T) {
	reg, dir := workspaceRegistry(t)
	var b strings.Builder
	for i := 1; i <= 1997; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.MkdirAll(filepath.Join(dir, "src/marshmallow"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src/marshmallow/fields.py"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const conv = "traj-1867"
	run := func(name, args string) string {
		t.Helper()
		out, err := runIn(t, reg, conv, "swe-agent", name, args)
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		return out
	}
	window := func(first, last, total int, path string) string {
		var w strings.Builder
		fmt.Fprintf(&w, "[File: %s (%d lines total)]", path, total)
		if first > 1 {
			fmt.Fprintf(&w, "\n(%d more lines above)", first-1)
		}
		for i := first; i <= last; i++ {
			fmt.Fprintf(&w, "\n%d:line %d", i, i)
		}
		if last < total {
			fmt.Fprintf(&w, "\n(%d more lines below)", total-last)
		}
		return w.String()
	}
	const fields = "src/marshmallow/fields.py"
	if got, want := run("open", `{"path":"src/marshmallow/fields.py","line_number":1474}`), window(1457, 1556, 1997, fields); got != want {
		t.Fatalf("open:\n%s\nwant\n%s", head(got), head(want))
	}
	if got, want := run("scroll_down", `{}`), window(1557, 1656, 1997, fields); got != want {
		t.Fatalf("scroll_down:\n%s\nwant\n%s", head(got), head(want))
	}
	if got, want := run("scroll_up", `{}`), window(1457, 1556, 1997, fields); got != want {
		t.Fatalf("scroll_up:\n%s\nwant\n%s", head(got), head(want))
	}
	// goto 1990: the window stops at the end (first line n - 100).
	if got, want := run("goto", `{"line_number":1990}`), window(1898, 1997, 1997, fields); got != want {
		t.Fatalf("goto 1990:\n%s\nwant\n%s", head(got), head(want))
	}
	if got, want := run("goto", `{"line_number":1}`), window(1, 100, 1997, fields); got != want {
		t.Fatalf("goto 1:\n%s\nwant\n%s", head(got), head(want))
	}
	if _, err := runIn(t, reg, conv, "swe-agent", "goto", `{"line_number":5000}`); err == nil || !strings.Contains(err.Error(), "Error: <line> must be less than or equal to 1997") {
		t.Fatalf("goto past the end: %v", err)
	}
	// edit and search_file work on the open file.
	if got := run("edit", `{"search":"line 1474\n","replace":"line 1474 # round to nearest int\n"}`); !strings.HasPrefix(got, "Text replaced. Please review the changes") {
		t.Fatalf("edit: %s", got)
	}
	data, _ := os.ReadFile(filepath.Join(dir, fields))
	if !strings.Contains(string(data), "line 1474 # round to nearest int\nline 1475\n") {
		t.Fatalf("the edit did not change the open file")
	}
	if got := run("search_file", `{"search_term":"round to nearest"}`); !strings.Contains(got, "1474") {
		t.Fatalf("search_file in the open file: %s", got)
	}
	// The line-range form (windowed_edit_linting) replaces lines of it.
	if got := run("edit", `{"start_line":1475,"end_line":1476,"replacement_text":"line 1475 # fixed\n"}`); !strings.HasPrefix(got, "File updated. Please review the changes and make sure they are correct\n(correct indentation") {
		t.Fatalf("edit 1475:1476: %s", got)
	}
	data, _ = os.ReadFile(filepath.Join(dir, fields))
	if !strings.Contains(string(data), "line 1474 # round to nearest int\nline 1475 # fixed\nline 1477\n") {
		t.Fatalf("the line-range edit did not replace lines 1475-1476")
	}
	// create makes the file and opens it; insert adds to it.
	if got := run("create", `{"filename":"reproduce.py"}`); got != "[File: reproduce.py (0 lines total)]" {
		t.Fatalf("create: %q", got)
	}
	run("insert", `{"text":"from marshmallow.fields import TimeDelta\nprint(1)\n"}`)
	if data, _ := os.ReadFile(filepath.Join(dir, "reproduce.py")); string(data) != "from marshmallow.fields import TimeDelta\nprint(1)\n" {
		t.Fatalf("insert into the created file: %q", data)
	}
	if got, want := run("open", `{"path":"reproduce.py"}`), "[File: reproduce.py (2 lines total)]\n1:from marshmallow.fields import TimeDelta\n2:print(1)"; got != want {
		t.Fatalf("open reproduce.py: %q, want %q", got, want)
	}
	// Another conversation has no file open.
	if _, err := runIn(t, reg, "other", "swe-agent", "scroll_down", `{}`); err == nil || !strings.Contains(err.Error(), "No file open") {
		t.Fatalf("another conversation's scroll_down: %v", err)
	}
	if _, err := runIn(t, reg, "other", "swe-agent", "edit", `{"search":"a","replace":"b"}`); err == nil || !strings.Contains(err.Error(), "open` or `create` a file first") {
		t.Fatalf("another conversation's edit: %v", err)
	}
}

func head(s string) string {
	lines := strings.SplitN(s, "\n", 4)
	if len(lines) > 3 {
		lines = append(lines[:3], "…")
	}
	return strings.Join(lines, "\n") + " … " + s[max(0, len(s)-60):]
}
