package daemon_test

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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
