package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// toolctl watch prints the changes under a workspace directory live, and
// ends with status 0 on Ctrl-C; a path outside the workspace is refused
// with status 1.
func TestWatch(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	if err := os.MkdirAll(filepath.Join(d.Workspace, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Workspace, ".gitignore"), []byte("*.tmp\n"), 0o644)

	runAsOperator(t, d, "watch", t.TempDir()).check(t, exitFailure, nil, []string{"outside the workspace"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testenv.Buffer
	a := &app{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		getenv:        func(k string) string { return map[string]string{"TOOLD_STATE_DIR": d.Main.Config.StateDir}[k] },
		isTerminal:    func(io.Writer) bool { return false },
		terminalWidth: func(io.Writer) int { return 0 },
	}
	done := make(chan int, 1)
	go func() { done <- a.run(ctx, []string{"--socket", d.Socket, "watch", "src", "--coalesce", "20ms"}) }()
	waitFor(t, &errOut, "the watch to start", func(s string) bool { return strings.Contains(s, "watching src (1 directories)") })
	os.WriteFile(filepath.Join(d.Workspace, "src/scratch.tmp"), nil, 0o644)
	os.WriteFile(filepath.Join(d.Workspace, "src/main.go"), []byte("package main\n"), 0o644)
	waitFor(t, &out, "the new file", func(s string) bool { return strings.Contains(s, "created src/main.go\n") })
	os.Remove(filepath.Join(d.Workspace, "src/main.go"))
	waitFor(t, &out, "the removal", func(s string) bool { return strings.Contains(s, "removed src/main.go\n") })
	if strings.Contains(out.String(), "scratch.tmp") {
		t.Fatalf("an ignored file was shown:\n%s", out.String())
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after Ctrl-C; stderr:\n%s", code, errOut.String())
	}
}
