package mcphosts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fixture is a workspace for one scripted turn: a file holding a marker,
// a canary a delete would remove, and the steps every host replays.
type fixture struct {
	ws, state  string
	canary     string
	fileMarker string
	cmdMarker  string
	final      string
	n          int64 // the command's marker is CMDMARK and n*42
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	n := time.Now().UnixNano() % 1e9
	f := &fixture{
		ws: t.TempDir(), state: t.TempDir(), n: n,
		fileMarker: fmt.Sprintf("FILEMARK%d", n),
		cmdMarker:  fmt.Sprintf("CMDMARK%d", n*42),
		final:      fmt.Sprintf("FINALMARK%d", n),
	}
	f.canary = filepath.Join(f.ws, "canary.txt")
	if err := os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("the marker is "+f.fileMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.canary, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// tooldArgs are the arguments of `toold mcp` for this workspace.
func (f *fixture) tooldArgs() []string {
	return []string{"mcp", "--workspace", f.ws, "--state-dir", f.state, "--approval-mode", "auto"}
}

// steps is the scripted turn: read_file of the marker file, run_command
// printing a marker computed by the shell (so the command's text does not
// hold it), then a delete toold asks about, whose answer (approval denied)
// must reach the model with denial; want says how this host's denial reads.
func (f *fixture) steps(denial ...string) []step {
	return []step{
		{tool: "read_file", args: map[string]any{"path": "notes.txt"}, want: []string{f.fileMarker}},
		{tool: "run_command", args: map[string]any{"command": fmt.Sprintf("echo CMDMARK$((%d*42))", f.n)}, want: []string{f.cmdMarker}},
		{tool: "run_command", args: map[string]any{"command": "rm -f canary.txt"}, want: denial},
	}
}

// checkCanary fails t when the denied delete happened anyway.
func (f *fixture) checkCanary(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(f.canary); err != nil {
		t.Errorf("the delete toold was denied ran anyway: %v", err)
	}
}
