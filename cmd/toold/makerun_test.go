package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/toold/toold/pkg/testenv"
)

// TestMakeRunCtrlC runs the README's first command, `make run`, on a
// terminal as a person does, waits until toold serves, and types Ctrl-C:
// toold shuts down cleanly and make ends with status 0, without make's
// "Interrupt" or "Error" (toold holds the terminal in a process group of its
// own, so the interrupt reaches it alone). Everything make writes goes to
// temporary directories (BIN, SOCKET, the state directory), never into the
// checkout.
func TestMakeRunCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toold with make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Need(t, err, "make")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "toold-makerun") // short: the socket's path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "run",
		"BIN="+filepath.Join(dir, "bin"), "SOCKET="+filepath.Join(dir, "t.sock"), "WORKSPACE="+ws,
		"RUN_ARGS=--state-dir "+filepath.Join(dir, "state"))
	cmd.Dir = repo
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	out := &testenv.Buffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	serving := testenv.Until(5*time.Minute, func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true
		default:
		}
		return strings.Contains(out.String(), "toold serving")
	})
	if !serving || !strings.Contains(out.String(), "toold serving") {
		_ = cmd.Process.Kill()
		t.Fatalf("make run did not start toold:\n%s", out.String())
	}
	if _, err := tty.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("make run did not end after Ctrl-C:\n%s", out.String())
	}
	<-copied
	text := out.String()
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) || waitErr != nil {
		t.Errorf("make run ended with %v after Ctrl-C, want status 0:\n%s", waitErr, text)
	}
	for _, bad := range []string{"Interrupt", "*** ", "level=ERROR"} {
		if strings.Contains(text, bad) {
			t.Errorf("make run printed %q after Ctrl-C:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "shutting down") {
		t.Errorf("toold did not shut down cleanly:\n%s", text)
	}
}
