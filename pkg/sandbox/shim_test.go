package sandbox_test

import (
	"context"
	"fmt"
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

// shimProbe connects to the shim socket in argv[1] and prints what it got:
// "GREETING <n> fds" when the shim greeted it, "REFUSED <why>" otherwise.
const shimProbe = `
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    s.settimeout(5)
    data, anc, flags, addr = s.recvmsg(1, socket.CMSG_SPACE(16))
    if data:
        print("GREETING", len(anc), "fds", flush=True)
    else:
        print("REFUSED closed", flush=True)
except Exception as e:
    print("REFUSED", e, flush=True)
`

// A shim's socket refuses the processes of commands: a command run under a
// helper (as toold runs every command), and its orphan that called setsid,
// connect to another process's shim and get no greeting (so no terminal
// master, and no ownership); toold (here: the test) still owns and adopts
// the shim.
func TestShimRefusesCommands(t *testing.T) {
	python, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	victim := t.TempDir()
	p := startShim(t, victim, "exec sleep 100", time.Hour)
	sock := filepath.Join(victim, "sock")
	probe := filepath.Join(t.TempDir(), "probe.py")
	if err := os.WriteFile(probe, []byte(shimProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, script string }{
		{"command", fmt.Sprintf("exec %s %s %s", python, probe, sock)},
		{"setsid orphan", fmt.Sprintf("( setsid %s %s %s > $OUT.orphan 2>&1 & ) ; exit 0", python, probe, sock)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outPath := filepath.Join(t.TempDir(), "out")
			out, err := os.Create(outPath)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			q, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), sandbox.Spec{
				Path: "/bin/sh", Args: []string{"sh", "-c", tc.script}, Env: []string{"OUT=" + outPath}, Dir: victim, Grace: time.Second, KeepTree: true,
			}, sandbox.Stdio{Stdout: out, Stderr: out})
			if err != nil {
				t.Fatal(err)
			}
			<-q.Done()
			var got string
			testenv.Poll(t, 20*time.Second, "the probe's answer", func() bool {
				a, _ := os.ReadFile(outPath)
				b, _ := os.ReadFile(outPath + ".orphan")
				got = string(a) + string(b)
				return strings.Contains(got, "GREETING") || strings.Contains(got, "REFUSED")
			})
			if !strings.Contains(got, "REFUSED") {
				t.Fatalf("a command's process was greeted by another process's shim: %q", got)
			}
		})
	}
	// The rightful owner is still served.
	q, _, err := sandbox.AdoptShim(victim, p.Pid(), time.Second)
	if err != nil {
		t.Fatalf("toold cannot adopt the shim: %v", err)
	}
	q.Detach()
	// The same probe run by the test itself (not a command) is greeted:
	// the refusals above are the peer check's, not a broken probe.
	b, err := exec.Command(python, probe, sock).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "GREETING") {
		t.Fatalf("the probe run by the test: %v %q", err, b)
	}
}

// Under Landlock alone (no namespaces: the non-root image), a command
// cannot kill its own helper — the helper is outside the command's
// Landlock domain, and the signal scope (ABI >= 6) holds — so its setsid
// orphan stays below the helper, in toold's tree, where the peer checks
// see it.
func TestLandlockCommandCannotKillItsHelper(t *testing.T) {
	if sandbox.LandlockABI() < 6 {
		testenv.Need(t, fmt.Errorf("landlock ABI %d", sandbox.LandlockABI()), "landlock's signal scope (ABI 6)")
	}
	dir := t.TempDir()
	outPath := filepath.Join(dir, "out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	script := `( setsid sh -c 'sleep 1; echo orphan-parent $(cut -d" " -f4 /proc/$$/stat) >> out' & ); kill -9 $PPID; echo kill=$?`
	p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), sandbox.Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: dir, Grace: time.Second, KeepTree: true,
		Policy: &sandbox.Policy{Writable: []string{dir}},
	}, sandbox.Stdio{Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	var got string
	testenv.Poll(t, 20*time.Second, "the orphan's report", func() bool {
		b, _ := os.ReadFile(outPath)
		got = string(b)
		return strings.Contains(got, "orphan-parent")
	})
	if strings.Contains(got, "kill=0") || strings.Contains(got, "orphan-parent 1\n") {
		t.Fatalf("the command killed its helper and its orphan left the tree: %q (exit %+v)", got, p.Exit())
	}
	if e := p.Exit(); e.Err != nil {
		t.Fatalf("the helper did not report the command's end: %+v", e)
	}
}
