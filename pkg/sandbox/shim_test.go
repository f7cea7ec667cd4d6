package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// startShim starts "sh -c script" under a shim whose directory is dir,
// with its output in dir/out.
func startShim(t *testing.T, dir, script string, orphan time.Duration) *sandbox.Process {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(dir, "out"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), sandbox.Spec{
		Path: sh, Args: []string{"sh", "-c", script}, Dir: dir, Grace: time.Second, KeepTree: true,
		Shim: &sandbox.ShimSpec{Dir: dir, Orphan: orphan},
	}, sandbox.Stdio{Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		<-p.Done()
	})
	return p
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A shim's tree runs on when its owner lets go, another owner adopts it
// (stop and exit status through the shim), and an orphaned shim stops its
// tree after its orphan time, recording how it ended.
func TestShimAdoptAndOrphan(t *testing.T) {
	t.Run("adopt and stop", func(t *testing.T) {
		dir := t.TempDir()
		p := startShim(t, dir, "echo started; exec sleep 100", time.Hour)
		p.Detach() // the first owner is gone
		testenv.Poll(t, 10*time.Second, "the command's output", func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "out"))
			return strings.Contains(string(b), "started")
		})
		q, master, err := sandbox.AdoptShim(dir, p.Pid(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if master != nil {
			t.Fatal("a background process's shim handed over a terminal")
		}
		if !alive(p.Pid()) {
			t.Fatal("the command does not run after its first owner let go")
		}
		q.Stop()
		<-q.Done()
		if e := q.Exit(); !e.Stopped || e.Err != nil {
			t.Fatalf("adopted and stopped: exit %+v", e)
		}
		if e, ok := sandbox.ReadShimExit(dir); !ok || !e.Stopped {
			t.Fatalf("exit.json: %+v, %v", e, ok)
		}
		<-p.Done()
		if alive(p.Pid()) {
			t.Fatal("the command still runs")
		}
		if _, _, err := sandbox.AdoptShim(dir, p.Pid(), time.Second); err == nil {
			t.Fatal("a shim that ended was adopted")
		}
	})
	t.Run("orphaned", func(t *testing.T) {
		dir := t.TempDir()
		p := startShim(t, dir, "exec sleep 100", 300*time.Millisecond)
		q, _, err := sandbox.AdoptShim(dir, p.Pid(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		p.Detach()
		// An owner holds it: it runs past its orphan time.
		select {
		case <-q.Done():
			t.Fatal("the shim ended while it had an owner")
		case <-time.After(time.Second):
		}
		q.Detach() // no owner left
		select {
		case <-p.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("the orphaned shim did not stop its tree")
		}
		if e, ok := sandbox.ReadShimExit(dir); !ok || !e.Stopped {
			t.Fatalf("exit.json: %+v, %v", e, ok)
		}
		if alive(p.Pid()) {
			t.Fatal("the command still runs")
		}
	})
}
