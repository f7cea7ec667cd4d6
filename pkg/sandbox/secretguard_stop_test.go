package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// TestSecretGuardStoppedThenKilled: a host process that opens a marked
// file while the guard's process is stopped (SIGSTOP, a debugger) waits
// for it; when the stopped process is then killed (SIGKILL), the open
// proceeds — the kernel answers what the dead group left pending — and
// neither the opener nor the dead process's exit stays blocked: a file a
// person wrote, and a file a command wrote (its own, which the guard also
// watches for writes from outside). The guard runs in a child (this test
// binary, SECRET_GUARD_STOP_CHILD), which in the second case runs the
// command that writes the file.
func TestSecretGuardStoppedThenKilled(t *testing.T) {
	if dir := os.Getenv("SECRET_GUARD_STOP_CHILD"); dir != "" {
		netns, marked := childGuard(t, dir)
		var p *sandbox.Process
		var err error
		if os.Getenv("SECRET_GUARD_STOP_OWN") != "" {
			// The command lives until the guard marked its file: its
			// creator must still be there to be seen as a command (one
			// gone is not an owner).
			pol := &sandbox.Policy{Isolate: true, Writable: []string{dir}}
			spec := sandbox.Spec{Dir: dir, Policy: pol, Env: []string{"PATH=" + os.Getenv("PATH")},
				Path: "/bin/sh", Args: []string{"sh", "-c", "printf %s " + lateSecret + " > .env; until [ -e marked ]; do sleep 0.01; done"}, Grace: time.Second}
			if p, err = (sandbox.Runner{Args: sandbox.TestHelperArgs}).Start(t.Context(), spec, sandbox.Stdio{Netns: netns.File()}); err != nil {
				t.Fatal(err)
			}
		}
		<-marked
		os.WriteFile(dir+"/marked", nil, 0o600)
		if p != nil {
			if e := p.Exit(); e.Code != 0 {
				t.Fatalf("the command writing .env: %s", e)
			}
		}
		select {} // until killed
	}
	isolation(t)
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "a person's file", true: "a command's own file"}[own], func(t *testing.T) {
			stoppedThenKilled(t, own)
		})
	}
}

func stoppedThenKilled(t *testing.T, own bool) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSecretGuardStoppedThenKilled$", "-test.v")
	child.Env = append(os.Environ(), "SECRET_GUARD_STOP_CHILD="+dir)
	if own {
		child.Env = append(child.Env, "SECRET_GUARD_STOP_OWN=1")
	}
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan struct{})
	go func() { child.Wait(); close(childDone) }()
	defer func() { child.Process.Kill(); <-childDone }()
	poll := func(what, name string) {
		testenv.Poll(t, time.Minute, what, func() bool {
			_, err := os.Stat(filepath.Join(dir, name))
			return err == nil
		})
	}
	poll("the child's guard", "ready")
	if !own {
		if err := os.WriteFile(dir+"/.env", []byte(lateSecret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	poll("the child marking .env", "marked")
	if own {
		// The command's own file: the guard also watches it for writes
		// from outside (a FAN_MODIFY mark, mask 0x2, of another group).
		var st syscall.Stat_t
		if err := syscall.Stat(dir+"/.env", &st); err != nil {
			t.Fatal(err)
		}
		if !childMarks(child.Process.Pid, st.Ino, "mask:2 ") {
			t.Fatalf("the command's own .env has no FAN_MODIFY mark of the guard")
		}
	}

	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A stop takes effect as each thread reaches the kernel's signal
	// delivery: wait until every thread of the guard is stopped.
	testenv.Poll(t, time.Minute, "the guard's threads stopped", func() bool {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(child.Process.Pid) + "/task")
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(child.Process.Pid) + "/task/" + task.Name() + "/stat")
			if i := strings.LastIndexByte(string(b), ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				return false
			}
		}
		return len(tasks) > 0
	})
	cat := exec.Command("cat", dir+"/.env")
	var catOut strings.Builder
	cat.Stdout = &catOut
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	catDone := make(chan error, 1)
	go func() { catDone <- cat.Wait() }()
	defer func() { cat.Process.Kill(); <-catDone }()
	// The opener waits for the stopped guard's answer.
	testenv.Poll(t, time.Minute, "cat waiting for the stopped guard", func() bool {
		select {
		case err := <-catDone:
			catDone <- err // for the deferred wait
			t.Fatalf("cat did not wait for the stopped guard: %v, %q", err, catOut.String())
		default:
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cat.Process.Pid) + "/wchan")
		return strings.Contains(string(b), "notify")
	})
	child.Process.Kill()
	select {
	case err := <-catDone:
		catDone <- err
		if err != nil || catOut.String() != lateSecret {
			t.Errorf("cat after the stopped guard was killed: %v, %q", err, catOut.String())
		}
	case <-time.After(30 * time.Second):
		stack := func(pid int) string {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stack")
			return string(b)
		}
		t.Errorf("the opener still waits 30 s after the stopped guard was killed (its stack:\n%s\nthe dead guard's:\n%s)",
			stack(cat.Process.Pid), stack(child.Process.Pid))
		return
	}
	select {
	case <-childDone:
	case <-time.After(30 * time.Second):
		t.Errorf("the killed guard's process did not end")
	}
}

// childMarks reports whether a fanotify group of process pid has a mark on
// inode ino whose fdinfo line holds what.
func childMarks(pid int, ino uint64, what string) bool {
	p := "/proc/" + strconv.Itoa(pid)
	fds, _ := os.ReadDir(p + "/fd")
	for _, fd := range fds {
		if l, _ := os.Readlink(p + "/fd/" + fd.Name()); l != "anon_inode:[fanotify]" {
			continue
		}
		b, _ := os.ReadFile(p + "/fdinfo/" + fd.Name())
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "ino:"+strconv.FormatUint(ino, 16)+" ") && strings.Contains(line, what) {
				return true
			}
		}
	}
	return false
}
