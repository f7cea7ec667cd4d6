package mcphosts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
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

// The token and address of the toold daemon a test starts for hosts that
// connect over HTTP (inside the test's namespace, so the fixed port is
// free).
const (
	httpToken = "s3cret-token-for-hosts"
	httpAddr  = "127.0.0.1:7777"
	httpURL   = "http://" + httpAddr + "/mcp"
)

// startDaemon runs toold as a daemon in ns for the fixture's workspace:
// its unix socket (toolctl hook's) and, with mcpHTTP, /mcp on httpAddr
// with httpToken; extra flags follow. It returns the socket once toold serves.
func (f *fixture) startDaemon(t *testing.T, ns *netns, mcpHTTP bool, extra ...string) string {
	t.Helper()
	toold, _ := binaries(t)
	sock := filepath.Join(f.state, "toold.sock")
	args := append([]string{"--socket", sock, "--state-dir", f.state, "--workspace", f.ws, "--approval-mode", "auto"}, extra...)
	if mcpHTTP {
		args = append(args, "--listen", httpAddr, "--mcp-http", "--token", httpToken)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := ns.command(ctx, f.ws, nil, toold, args...)
	log := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("toold:\n%s", log.String())
		}
	})
	testenv.Poll(t, time.Minute, "toold's socket", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("toold exited: %v\n%s", err, log.String())
		default:
		}
		_, err := os.Stat(sock)
		return err == nil
	})
	return sock
}

// transports are the ways a host reaches toold: it starts `toold mcp`
// (stdio), or connects to a running toold's /mcp (http).
var transports = []string{"stdio", "http"}

// checkTools fails t unless the host offered the model toold's tools,
// but for those it is known to hide (absent, which must then be absent).
func checkTools(t *testing.T, m *model, absent ...string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, want := range []string{"read_file", "run_command", "write_file", "edit_file", "grep_search", "list_dir", "apply_patch", "git_status"} {
		hidden := slices.Contains(absent, want)
		if got := pick(m.tools, want) != ""; got == hidden {
			t.Errorf("the host offered the model toold's %s: %v, want %v (offered: %v)", want, got, !hidden, m.tools)
		}
	}
}
