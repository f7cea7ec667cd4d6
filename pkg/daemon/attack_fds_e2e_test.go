package daemon_test

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// fdWriter writes a marker to every descriptor above 2 it holds and prints
// what it found.
const fdWriter = `import os, sys
for f in sorted(int(x) for x in os.listdir("/proc/self/fd")):
    if f < 3:
        continue
    try:
        what = os.readlink("/proc/self/fd/%d" % f)
        os.set_blocking(f, False)
        os.write(f, (sys.argv[1] + "\n").encode())
        print("WROTE", f, what)
    except OSError as e:
        print("no", f, e)
print("END")
`

// Issue 25 (a socket inherited across exec): descriptors toold inherited
// from whoever started it — an agent host that left a pipe to itself and a
// socket open without close-on-exec — never reach a command, sandboxed or
// not: the command writes to every descriptor it holds, and nothing
// arrives at the other ends.
func TestInheritedDescriptorsOutOfReachEndToEnd(t *testing.T) {
	python := requireTool(t, "python3")
	for _, mode := range []string{"auto", "off"} {
		t.Run("sandbox "+mode, func(t *testing.T) {
			if mode == "auto" {
				sandboxed(t)
			}
			// As a parent that leaked them: no O_CLOEXEC.
			var p [2]int
			if err := unix.Pipe(p[:]); err != nil {
				t.Fatal(err)
			}
			sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				for _, fd := range []int{p[0], p[1], sp[0], sp[1]} {
					unix.Close(fd)
				}
			})
			for _, fd := range []int{p[0], sp[1]} {
				unix.CloseOnExec(fd) // the ends the parent reads
				unix.SetNonblock(fd, true)
			}
			d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
				c.ApprovalMode = "yolo"
				c.Terminal.Sandbox = mode
			}))
			x := newSession(t, d)
			marker := "INHERITED-" + randomHex(t, 6)
			for i, how := range []string{"foreground", "background"} {
				args := map[string]any{"command": fmt.Sprintf("%s -c '%s' %s", python, strings.ReplaceAll(fdWriter, "'", `'"'"'`), marker)}
				if how == "background" {
					args["is_background"] = true
				}
				res, _ := x.call(fmt.Sprint("c", i), "run_command", jsonArgs(args), approveOnce)
				out := text(res)
				if how == "background" {
					pid, _ := res.GetStructured().AsMap()["process_id"].(string)
					r, _ := x.call(fmt.Sprint("w", i), "wait", mustJSON(t, map[string]any{"process_id": pid, "timeout": 60}))
					r2, _ := x.call(fmt.Sprint("o", i), "get_output", mustJSON(t, map[string]any{"process_id": pid}))
					out = text(r) + text(r2)
				}
				if !strings.Contains(out, "END") {
					t.Fatalf("%s: the command did not run: %s", how, out)
				}
				buf := make([]byte, 4096)
				for _, fd := range []int{p[0], sp[1]} {
					if n, _ := unix.Read(fd, buf); n > 0 {
						t.Errorf("%s: a command wrote to a descriptor toold inherited from its parent (%q):\n%s", how, buf[:n], out)
					}
				}
			}
		})
	}
}

// helperAttack goes after the process that runs the command in the sandbox
// (its helper, the init of its pid namespace, which still holds its
// socket to toold and capabilities in its user namespace) and after any
// other process it can see: ptrace, process_vm_readv, /proc/PID/mem, its
// descriptors and environment, SIGSTOP and SIGKILL. It prints a marker for
// each that worked.
const helperAttack = `import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
me = os.getpid()
pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
print("SEE", pids)
for pid in pids:
    if libc.ptrace(16, pid, 0, 0) == 0:
        print("PT" "RACED", pid)
        libc.ptrace(17, pid, 0, 0)
    buf = ctypes.create_string_buffer(64)
    local, remote = iovec(ctypes.cast(buf, ctypes.c_void_p), 64), iovec(0x400000, 64)
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) > 0:
        print("VM" "READ", pid)
    for f in ("mem", "environ"):
        try:
            with open("/proc/%d/%s" % (pid, f), "rb") as fh:
                if fh.read(16):
                    print("PROC" "READ", pid, f)
        except OSError:
            pass
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            os.open("/proc/%d/fd/%s" % (pid, fd), os.O_RDWR)
            print("FD" "OPENED", pid, fd)
    except OSError:
        pass
    for sig in (signal.SIGSTOP, signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
print("END")
`

// Issue 25, the warm helpers: a sandboxed command attacks the helper that
// runs it and anything else it can see (another conversation's command
// runs at the same time, under a helper of its own). Nothing works: the
// helper is not traceable, its memory, environment and descriptors are not
// readable, and the signals do not end it — the command's call ends
// normally, and the other conversation's command runs on, unseen.
func TestAttackWarmHelpersEndToEnd(t *testing.T) {
	sandboxed(t)
	python := requireTool(t, "python3")
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	victim := newSession(t, d)
	victim.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "victim"}}})
	res, _ := victim.call("bg", "run_command", jsonArgs(map[string]any{"command": "for i in $(seq 100); do echo tick-$i; sleep 0.1; done; echo VICTIM-DONE", "is_background": true}))
	pid, _ := res.GetStructured().AsMap()["process_id"].(string)
	if pid == "" {
		t.Fatalf("background: %v", res)
	}
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "attacker"}}})
	for i := range 3 {
		res, _ := x.call(fmt.Sprint("a", i), "run_command", jsonArgs(map[string]any{"command": fmt.Sprintf("%s -c '%s'", python, strings.ReplaceAll(helperAttack, "'", `'"'"'`))}))
		out := text(res)
		if !strings.Contains(out, "END") {
			t.Fatalf("the attack did not run to its end (its helper ended?): %v", res)
		}
		t.Logf("attack %d: %s", i, strings.TrimSpace(out))
		for _, m := range []string{"PTRACED", "VMREAD", "PROCREAD", "FDOPENED", "tick-"} {
			if strings.Contains(out, m) {
				t.Errorf("%s: a sandboxed command got at its helper or another process:\n%s", m, out)
			}
		}
	}
	r, _ := victim.call("wait", "wait", mustJSON(t, map[string]any{"process_id": pid, "timeout": 60}))
	r2, _ := victim.call("out", "get_output", mustJSON(t, map[string]any{"process_id": pid}))
	if !strings.Contains(text(r)+text(r2), "VICTIM-DONE") {
		t.Fatalf("the other conversation's command did not run to its end: %s %s", text(r), text(r2))
	}
}
