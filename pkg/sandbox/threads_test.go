package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
)

// threadModes are the ways a command is started in these tests: under a
// plain helper, and isolated in the sandbox with a shared network
// namespace and (where the cgroup controllers are there) a v1/v2 slot.
// fail and tempDir are the test's (t.Fatal, t.TempDir), or the fake
// daemon's.
func threadModes(fail func(...any), tempDir func() string) map[string]func(*sandbox.Spec, *sandbox.Stdio) func() {
	modes := map[string]func(*sandbox.Spec, *sandbox.Stdio) func(){
		"helper": func(*sandbox.Spec, *sandbox.Stdio) func() { return func() {} },
	}
	if sandbox.ProbeIsolation(sandbox.Runner{Args: sandbox.TestHelperArgs}) == nil {
		modes["isolated"] = func(spec *sandbox.Spec, stdio *sandbox.Stdio) func() {
			dir := tempDir()
			spec.Dir = dir
			spec.Policy = &sandbox.Policy{Isolate: true, Writable: []string{dir}}
			ns, err := sandbox.OpenNetns("")
			if err != nil {
				fail(err)
			}
			stdio.Netns = ns.File()
			var slot *sandbox.Slot
			if lim, err := sandbox.OpenLimits(0, 0); err == nil {
				if slot, err = lim.Take(); err != nil {
					fail(err)
				}
				stdio.Slot = slot
				return func() { slot.Release(); lim.Close(); ns.Close() }
			}
			return func() { ns.Close() }
		}
	}
	return modes
}

// TestCommandOutlivesStartingThread: a command (a background process, a
// session) runs on after the goroutine that started it ended locked to its
// thread — the runtime then ends the thread, which would have sent a
// parent-death signal tied to it — and still answers its input.
func TestCommandOutlivesStartingThread(t *testing.T) {
	for name, prepare := range threadModes(t.Fatal, t.TempDir) {
		t.Run(name, func(t *testing.T) {
			spec := sandbox.Spec{
				Path: "/bin/bash", Args: []string{"bash", "-c", "read line; echo got $line"},
				Env: []string{"PATH=" + os.Getenv("PATH")}, Grace: time.Second,
			}
			inR, inW, _ := os.Pipe()
			outR, outW, _ := os.Pipe()
			defer inW.Close()
			defer outR.Close()
			stdio := sandbox.Stdio{Stdin: inR, Stdout: outW, Stderr: outW}
			defer prepare(&spec, &stdio)()
			type started struct {
				p   *sandbox.Process
				tid int
				err error
			}
			ch := make(chan started, 1)
			go func() {
				// Ends locked: the runtime ends this thread — unless it is
				// the process's main thread, which it keeps (wedged).
				runtime.LockOSThread()
				for unix.Gettid() == os.Getpid() {
					runtime.UnlockOSThread()
					time.Sleep(time.Millisecond)
					runtime.LockOSThread()
				}
				p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(context.Background(), spec, stdio)
				ch <- started{p, unix.Gettid(), err}
			}()
			s := <-ch
			inR.Close()
			outW.Close()
			if s.err != nil {
				t.Fatal(s.err)
			}
			waitFor(t, func() bool {
				_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", s.tid))
				return os.IsNotExist(err)
			})
			// Any parent-death signal tied to that thread has been sent by
			// now; the command must still be waiting for its line.
			select {
			case <-s.p.Done():
				t.Fatalf("the command ended with its starting thread: %s", s.p.Exit())
			default:
			}
			fmt.Fprintln(inW, "hello")
			line, _ := bufio.NewReader(outR).ReadString('\n')
			if line != "got hello\n" {
				t.Fatalf("output %q, exit %s", line, s.p.Exit())
			}
			if exit := s.p.Exit(); exit.Code != 0 || exit.Stopped {
				t.Fatalf("exit %+v", exit)
			}
		})
	}
}

// fakeDaemonEnv makes the test binary a daemon that starts a command in
// each thread mode (plain helper, isolated), prints "ready" and waits to
// be killed: TestCommandsDieWithDaemon.
const fakeDaemonEnv = "TOOLD_SANDBOX_TEST_FAKE_DAEMON"

func fakeDaemon(tok, dir string) {
	fail := func(v ...any) { fmt.Println(append([]any{"error:"}, v...)...); os.Exit(1) }
	for _, prepare := range threadModes(fail, func() string { return dir }) {
		spec := sandbox.Spec{
			Path: "/bin/bash", Args: []string{"bash", "-c", "sleep 100." + tok + "; echo never"},
			Env: []string{"PATH=" + os.Getenv("PATH")}, Grace: time.Second,
		}
		var stdio sandbox.Stdio
		_ = prepare(&spec, &stdio) // never released: the daemon is killed
		if _, err := (sandbox.Runner{Args: sandbox.TestHelperArgs}).Start(context.Background(), spec, stdio); err != nil {
			fail(err)
		}
	}
	// A warm pool (where namespaces can be made): one command run by a
	// ready helper, and helpers still ready or being prepared, each marked
	// by tok in its argv.
	warm := 0
	if sandbox.ProbeIsolation(sandbox.Runner{Args: sandbox.TestHelperArgs}) == nil {
		ns, err := sandbox.OpenNetns("")
		if err != nil {
			fail(err)
		}
		pol := &sandbox.Policy{Isolate: true, Writable: []string{dir}}
		w := sandbox.NewWarm(sandbox.Runner{Args: append(slices.Clone(sandbox.TestHelperArgs), "warm."+tok)}, ns.File(), nil, time.Second, 2, func() *sandbox.Policy { return pol })
		for w.ReadyNow() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		spec := sandbox.Spec{
			Path: "/bin/bash", Args: []string{"bash", "-c", "sleep 100." + tok + "; echo never"},
			Env: []string{"PATH=" + os.Getenv("PATH")}, Grace: time.Second, Dir: dir, Policy: pol,
		}
		if _, ok, err := w.Start(context.Background(), spec, sandbox.Stdio{}); !ok || err != nil {
			fail("warm start", ok, err)
		}
		warm = 2 + 1 + 1 // bash and sleep, their helper, one helper ready
	}
	fmt.Printf("ready %d\n", warm)
	select {}
}

// TestCommandsDieWithDaemon: when toold is killed outright (SIGKILL, no
// chance to stop anything), the commands it started — under a helper,
// isolated, and by a warm helper — are stopped by their helpers, and the
// warm helpers still waiting for a command exit.
func TestCommandsDieWithDaemon(t *testing.T) {
	tok := token(t)
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeDaemonEnv+"="+tok+":"+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(kill)
	line, _ := bufio.NewReader(out).ReadString('\n')
	var warm int
	if _, err := fmt.Sscanf(line, "ready %d\n", &warm); err != nil {
		t.Fatalf("fake daemon: %q", line)
	}
	// bash and its sleep, in each mode; what the warm pool holds.
	want := 2*len(threadModes(t.Fatal, t.TempDir)) + warm
	waitForMsg(t, func() bool { return len(survivors(tok)) >= want }, func() string { return fmt.Sprint(survivors(tok)) })
	kill()
	deadline := time.Now().Add(20 * time.Second)
	for len(survivors(tok)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("commands outlived the daemon: %v", survivors(tok))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
