package daemon_test

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// shimAttack connects to every shim socket below the state directory
// (argv[1]), takes what each hands over (a session's terminal master), types
// a line into it and reads what the terminal shows for two seconds. It
// prints "SOCKETS n", and per socket "GREETING"/"REFUSED", and whatever it
// read.
const shimAttack = `
import glob, os, socket, sys, time
socks = glob.glob(os.path.join(sys.argv[1], "procs", "*", "sock"))
print("SOCKETS", len(socks), flush=True)
for p in socks:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p)
        s.settimeout(5)
        data, anc, flags, addr = s.recvmsg(1, socket.CMSG_SPACE(16))
        if not data:
            print("REFUSED closed", flush=True)
            continue
        print("GREETING", flush=True)
        for level, kind, fds in anc:
            fd = int.from_bytes(fds[:4], "little")
            os.write(fd, sys.argv[2].encode() + b"\n")
            os.set_blocking(fd, False)
            end = time.time() + 2
            while time.time() < end:
                try:
                    print("READ", os.read(fd, 4096), flush=True)
                except BlockingIOError:
                    time.sleep(0.05)
    except Exception as e:
        print("REFUSED", e, flush=True)
`

// Issue 25, the shims' side door, live: another conversation's session runs
// under a shim whose socket (in toold's state directory) hands its terminal
// master to whoever may connect. A command — in the foreground and in the
// background (itself under a shim), sandboxed and with the sandbox off,
// where the state directory is readable — connects to every shim socket,
// types into what it gets and reads from it. The victim's terminal never
// shows the typed line, and the attacker never reads the victim's output.
func TestShimSocketsRefuseCommandsEndToEnd(t *testing.T) {
	python := requireTool(t, "python3")
	for _, mode := range []string{"auto", "off"} {
		t.Run("sandbox "+mode, func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
				c.ApprovalMode = "yolo"
				c.Terminal.Sandbox = mode
			}))
			state := d.Main.Config.StateDir
			script := filepath.Join(t.TempDir(), "attack.py")
			if err := os.WriteFile(script, []byte(shimAttack), 0o644); err != nil {
				t.Fatal(err)
			}
			victim := newSession(t, d)
			victim.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "victim"}}})
			res, _ := victim.call("open", "create_session", `{}`)
			sid, _ := res.GetStructured().AsMap()["session_id"].(string)
			if sid == "" {
				t.Fatalf("create_session: %v", res)
			}
			// The victim's terminal prints a secret (computed, so that the
			// typed line does not hold it) until it is closed.
			secret := "VICTIM-" + randomHex(t, 6)
			loop := fmt.Sprintf("while :; do echo %s-$((6*7)); sleep 0.2; done\n", secret)
			victim.call("loop", "send_input", mustJSON(t, map[string]any{"session_id": sid, "data": loop}))
			var shown strings.Builder
			read := func(id string) {
				r, _ := victim.call(id, "get_output", fmt.Sprintf(`{"session_id":%q,"wait_ms":300,"raw":true}`, sid))
				shown.WriteString(text(r))
			}
			eventually(t, "the victim's loop", func() bool {
				read("wait-" + randomHex(t, 3))
				return strings.Contains(shown.String(), secret+"-42")
			})
			if mode == "off" {
				if m, _ := filepath.Glob(filepath.Join(state, "procs", "*", "sock")); len(m) == 0 {
					t.Fatal("no shim socket in the state directory: the attack proves nothing")
				}
			}

			attacker := newSession(t, d)
			attacker.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "attacker"}}})
			for _, how := range []string{"foreground", "background"} {
				marker := "ATTACK-" + randomHex(t, 6)
				// The state directory's path is hidden from the judge, as a
				// hostile model would hide it: the kernel and the shims
				// must hold, not the judge's sensitive-path rule.
				cmd := fmt.Sprintf("%s %s \"$(echo %s | base64 -d)\" 'echo %s'", python, script, base64.StdEncoding.EncodeToString([]byte(state)), marker)
				args := map[string]any{"command": cmd, "timeout": 60}
				if how == "background" {
					args["is_background"] = true
				}
				res, _ := attacker.call(how, "run_command", mustJSON(t, args), approveOnce)
				out := text(res)
				if how == "background" {
					pid, _ := res.GetStructured().AsMap()["process_id"].(string)
					if pid == "" {
						t.Fatalf("background: %v", res)
					}
					r, _ := attacker.call(how+"-wait", "wait", mustJSON(t, map[string]any{"process_id": pid, "timeout": 60}))
					r2, _ := attacker.call(how+"-out", "get_output", mustJSON(t, map[string]any{"process_id": pid}))
					out = text(r) + text(r2)
				}
				t.Logf("%s attacker: %s", how, strings.TrimSpace(out))
				if !strings.Contains(out, "SOCKETS") {
					t.Fatalf("%s: the attack did not run: %s", how, out)
				}
				if strings.Contains(out, "GREETING") || strings.Contains(out, secret) {
					t.Errorf("%s: a command was served by another conversation's shim: %s", how, out)
				}
				if mode == "off" && !strings.Contains(out, "REFUSED") {
					t.Errorf("%s: with the sandbox off the command should have reached a shim socket and been refused: %s", how, out)
				}
				// What the attacker typed never reached the victim's
				// terminal (its echo would show it).
				read(how + "-after")
				read(how + "-after2")
				if strings.Contains(shown.String(), marker) {
					t.Errorf("%s: the attacker's line reached the victim's terminal:\n%s", how, shown.String())
				}
			}
			// The victim's session still runs and is still its own.
			shown.Reset()
			eventually(t, "the victim's loop after the attacks", func() bool {
				read("still-" + randomHex(t, 3))
				return strings.Contains(shown.String(), secret+"-42")
			})
			victim.call("close", "close_session", mustJSON(t, map[string]any{"session_id": sid}))
		})
	}
}

// A unix socket bound outside the workspace just before a command starts
// — after the command before it, so that whatever toold remembers of the
// sockets it saw is fresh — is out of the command's reach, like one bound
// long before (issue 25: the masks of the moment).
func TestFreshUnixSocketMaskedEndToEnd(t *testing.T) {
	sandboxed(t)
	py := requireTool(t, "python3")
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := newSession(t, d)
	probe := `import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); s.sendall(b"x"); print("CONNECTED")
except OSError as e:
    print("refused", e)
`
	os.WriteFile(filepath.Join(d.Workspace, "probe.py"), []byte(probe), 0o644)
	for i := range 3 {
		// A command runs first: toold has just looked at the sockets.
		if res, _ := x.call(fmt.Sprint("warm", i), "run_command", `{"command":"true"}`, approveOnce); !res.GetSuccess() {
			t.Fatalf("true: %v", res)
		}
		path := filepath.Join(t.TempDir(), "fresh.sock")
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan struct{}, 1)
		go func() {
			if c, err := ln.Accept(); err == nil {
				accepted <- struct{}{}
				c.Close()
			}
		}()
		res, _ := x.call(fmt.Sprint("probe", i), "run_command", jsonArgs(map[string]any{"command": py + " probe.py " + path}), approveOnce)
		ln.Close()
		out := text(res)
		select {
		case <-accepted:
			t.Fatalf("a socket bound just before the command was reached from the sandbox:\n%s", out)
		default:
		}
		if strings.Contains(out, "CONNECTED") {
			t.Fatalf("a socket bound just before the command was reached from the sandbox:\n%s", out)
		}
	}
}
