package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// fanotifyMarks reports whether one of this process's fanotify groups (the
// daemon runs in the test process) has a mark on the inode of path: the
// kernel lists each inode mark in the group's fdinfo.
func fanotifyMarks(path string) bool {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	// sdev is the kernel's encoding of the device, not stat's: the inode alone.
	want := fmt.Sprintf("ino:%x sdev:", st.Ino)
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if l, _ := os.Readlink("/proc/self/fd/" + fd.Name()); l != "anon_inode:[fanotify]" {
			continue
		}
		if b, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name()); err == nil && strings.Contains(string(b), want) {
			return true
		}
	}
	return false
}

// TestSecretAppearingWhileRunningEndToEnd (issue 25 item 2): a background
// command the model started keeps trying to read secrets that do not exist
// yet; a person then writes a .env, a key put in place by a rename and a
// credentials file in a new directory into the workspace. Once toold has
// marked them, the running command reads none of their bytes — by path or
// through a hard link it makes — and what it prints (get_output) holds
// none of them; the person still reads every file.
func TestSecretAppearingWhileRunningEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := guardedSession(t, d, "late")
	ws := d.Workspace
	// The command waits for "go", then reads each secret by path and
	// through a hard link, and says so.
	script := `until [ -e go ]; do sleep 0.05; done
for f in .env cfg/server.pem keys/deploy/credentials; do
  echo "== $f"; cat "$f" 2>&1; ln "$f" "$f.hl" 2>&1 && cat "$f.hl" 2>&1
done
echo DONE`
	res, _ := x.call("bg", "run_command", mustJSON(t, map[string]any{"command": script, "is_background": true}))
	procID, _ := res.GetStructured().AsMap()["process_id"].(string)
	if procID == "" {
		t.Fatalf("background command: %s", text(res))
	}
	secret := "PERSON-LATE-" + randomHex(t, 8)
	// The person's secrets, after the command started.
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, "cfg"), 0o755)
	os.WriteFile(filepath.Join(ws, "cfg", ".server.pem.tmp"), []byte(secret+"\n"), 0o600)
	if err := os.Rename(filepath.Join(ws, "cfg", ".server.pem.tmp"), filepath.Join(ws, "cfg", "server.pem")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, "keys", "deploy"), 0o755)
	os.WriteFile(filepath.Join(ws, "keys", "deploy", "credentials"), []byte(secret+"\n"), 0o600)
	sensitive := []string{".env", "cfg/server.pem"}
	// keys/deploy/credentials is sensitive only under ~/.aws: the
	// control, a file the policy does not call secret, is read.
	for _, f := range sensitive {
		testenv.Poll(t, time.Minute, "toold marking "+f, func() bool { return fanotifyMarks(filepath.Join(ws, f)) })
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	testenv.Poll(t, time.Minute, "the command's end", func() bool {
		res, _ := x.call("wait"+strconv.Itoa(int(time.Now().UnixNano())), "get_output", mustJSON(t, map[string]any{"process_id": procID, "wait_ms": 500}))
		out += text(res)
		return strings.Contains(out, "DONE")
	})
	t.Logf("the command's output:\n%s", out)
	for _, f := range sensitive {
		sec := strings.SplitN(out, "== "+f, 2)
		if len(sec) < 2 {
			t.Fatalf("no attempt on %s in the output", f)
		}
		part, _, _ := strings.Cut(sec[1], "== ")
		if strings.Contains(part, secret) {
			t.Errorf("the running command read %s, written after it started:\n%s", f, part)
		}
		if !strings.Contains(part, "Operation not permitted") && !strings.Contains(part, "Permission denied") {
			t.Errorf("reading %s: want a refusal:\n%s", f, part)
		}
	}
	if sec := strings.SplitN(out, "== keys/deploy/credentials", 2); len(sec) < 2 || !strings.Contains(sec[1], secret) {
		t.Errorf("the control (a file the policy does not call secret) was not read:\n%s", out)
	}
	for _, f := range append(sensitive, "keys/deploy/credentials") {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || !strings.Contains(string(b), secret) {
			t.Errorf("the person cannot read %s: %q %v", f, b, err)
		}
	}
}

// TestSecretGuardOptionEndToEnd: terminal.secret_guard: false turns the
// guard off, and the reads layer's detail says so: a secret that appears
// while a command runs is not refused to it.
func TestSecretGuardOptionEndToEnd(t *testing.T) {
	off := false
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.SecretGuard = &off
	}))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "off"}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome() == nil {
		t.Fatalf("welcome: %v %v", w, err)
	}
	for _, l := range w.GetWelcome().GetSandbox().GetLayers() {
		if l.GetName() != "reads" {
			continue
		}
		if !l.GetInForce() {
			t.Skipf("the reads layer is not in force here: %s", l.GetDetail())
		}
		if !strings.Contains(l.GetDetail(), "NOT refused to it") || !strings.Contains(l.GetDetail(), "secret_guard is false") {
			t.Errorf("the reads layer does not say the guard is off: %s", l.GetDetail())
		}
		return
	}
	t.Fatal("no reads layer in Welcome")
}

// guardedSession opens a stream of conversation conv on d and returns it
// once its Welcome says the secret guard is in force (the sandbox's reads
// layer refuses secrets by the kernel); the test is skipped where it is not,
// and fails there when peers are required.
func guardedSession(t *testing.T, d *daemontest.Daemon, conv string) *session {
	t.Helper()
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}})
	w, err := x.s.Recv()
	if err != nil || w.GetWelcome() == nil {
		t.Fatalf("welcome: %v %v", w, err)
	}
	var reads *pb.SandboxLayer
	for _, l := range w.GetWelcome().GetSandbox().GetLayers() {
		if l.GetName() == "reads" {
			reads = l
		}
	}
	if !reads.GetInForce() || !strings.Contains(reads.GetDetail(), "refused to it by the kernel") {
		if testenv.Required() {
			t.Fatalf("the secret guard is not in force: %v", reads)
		}
		t.Skipf("the secret guard is not in force here: %v", reads)
	}
	return x
}
