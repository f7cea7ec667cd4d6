package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/testenv"
)

// Two toolds on one state directory (two workspaces, each its own socket):
// the second is refused, saying who holds the directory and naming
// --state-dir; the first's audit chain stays whole; once the first has
// stopped, the directory is free again.
func TestStateDirOneTooldAtATime(t *testing.T) {
	state := t.TempDir()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.StateDir = state }))

	second := func() *daemon.Main {
		m := &daemon.Main{Config: config.Default(), Logger: slog.New(slog.DiscardHandler)}
		m.Config.Socket = filepath.Join(filepath.Dir(d.Socket), "second.sock")
		m.Config.Workspace = t.TempDir()
		m.Config.StateDir = state
		return m
	}
	m := second()
	err := m.Run(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("a second toold started on a state directory in use")
	}
	for _, want := range []string{state, "--state-dir", fmt.Sprintf("pid %d", os.Getpid()), d.Workspace, d.Socket} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if !errors.Is(err, daemon.ErrStateDirInUse) || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("refusal %v: want ErrStateDirInUse, class UNAVAILABLE", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(d.Socket), "second.sock")); !os.IsNotExist(err) {
		t.Errorf("the refused toold left its socket: %v", err)
	}

	// The first one's chain: its calls are recorded, nothing interleaved.
	x := newSession(t, d)
	for i := range 3 {
		x.call(fmt.Sprint(i), "think", `{"thought": "x"}`)
	}
	if err := d.Main.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(filepath.Join(state, "audit"))
	if err != nil || rep.Records == 0 {
		t.Fatalf("audit verify: %+v %v", rep, err)
	}

	// Stopped, it lets go.
	m = second()
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// A lock left by a toold that is gone — still held for a moment by a child
// it was forking, which has the lock's descriptor until its exec closes it
// — does not refuse the next toold: it waits for the lock (here: a
// flock(1) holding it half a second, with the file naming a process that
// has exited). A lock whose named holder is alive is refused at once.
func TestStateDirLockOfAGoneTooldIsWaitedFor(t *testing.T) {
	flock, err := exec.LookPath("flock")
	testenv.Need(t, err, "flock(1)")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	lock := filepath.Join(state, daemon.StateLockFile)
	if err := os.WriteFile(lock, []byte(fmt.Sprintf("pid %d, workspace /gone\n", gone.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(flock, "-x", lock, "sh", "-c", "echo held; sleep 0.5")
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("flock did not take the lock: %q %v", buf, err)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.StateDir = state }))
	if d.Main.Config.StateDir != state {
		t.Fatalf("state dir %s", d.Main.Config.StateDir)
	}
}
