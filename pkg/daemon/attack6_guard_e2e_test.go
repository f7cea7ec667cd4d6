package daemon_test

// Attacks on the secret guard's per-directory inode marks (guard2,
// 5bab8eb) by the model's own commands, checked against docs/terminal.md:
// a file a command creates itself is readable to it and refused to other
// commands; the next command's masks hide every sensitive name of the
// workspace (the walk is redone when a watched directory changed); a
// directory that appears in a watched one (made, or moved in) is marked,
// and a sensitive name in it; the mark is on the inode, so "by any name —
// a hard link, a rename to a harmless name and back" is refused; the
// directories .git and node_modules are not watched ("a secret there is
// not masked for any command"), but a tree moved out of them into the
// workspace is looked at.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// hideEnv names ".env" as $E, built when the command runs: the policy
// refuses a command line naming a sensitive path before it runs, and the
// attack is on what runs.
const hideEnv = `E=$(printf '\056env'); `

func TestAttackSecretGuardCommandSecrets(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := guardedSession(t, d, "a6-guard")
	ws := d.Workspace
	n := 0
	run := func(cmd string) string {
		t.Helper()
		n++
		res, _ := x.call("c"+strconv.Itoa(n), "run_command", mustJSON(t, map[string]any{"command": hideEnv + cmd}))
		return text(res)
	}
	canary := func(tag string) string { return "A6-" + tag + "-" + randomHex(t, 8) }

	// A running command started first, reading the later secrets once
	// toold has marked them (a read within the window between a file's
	// creation and its mark is documented to succeed): it reads none.
	watcher, _ := x.call("bg", "run_command", mustJSON(t, map[string]any{"is_background": true, "command": hideEnv + `: > watcher-up
until [ -e go ]; do sleep 0.02; done
for i in 1 2 3; do
  for f in a/b/c/d/$E hl.txt moved/s/$E fromtmp/y/$E hosttree/u/$E; do echo "== $f"; cat "$f" 2>&1; done
done
echo DONE`}))
	procID, _ := watcher.GetStructured().AsMap()["process_id"].(string)
	if procID == "" {
		t.Fatalf("background command: %s", text(watcher))
	}
	testenv.Poll(t, time.Minute, "the watcher to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "watcher-up"))
		return err == nil
	})

	// 1. A secret in a brand-new deep directory, made by a command: its
	// own (it reads it back), and a hard link to a harmless name.
	c1 := canary("deep")
	out := run(`mkdir -p a/b/c/d && echo ` + c1 + ` > a/b/c/d/$E && ln a/b/c/d/$E hl.txt && cat a/b/c/d/$E`)
	// Its own read back is not asserted here: see
	// TestAttackSecretGuardOwnFileInNewDir.
	t.Logf("the command's read back of its own .env: %s", out)
	// 2. A tree holding a secret moved in from node_modules (not watched)
	// by one command; another made in the command's /tmp and moved in.
	c2, c3 := canary("nm"), canary("tmp")
	for _, cmd := range []string{
		`mkdir -p node_modules/p/s && echo ` + c2 + ` > node_modules/p/s/$E`,
		`mv node_modules/p moved`,
		`T=${TMPDIR:-/tmp}; mkdir -p $T/x/y && echo ` + c3 + ` > $T/x/y/$E && mv $T/x fromtmp && ls -la fromtmp/y`,
	} {
		t.Logf("%s: %s", cmd, run(cmd))
	}
	// 3. The host's tree from a directory outside the workspace, renamed in.
	c4 := canary("host")
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "t", "u"), 0o755)
	os.WriteFile(filepath.Join(outside, "t", "u", ".env"), []byte(c4+"\n"), 0o600)
	if err := os.Rename(filepath.Join(outside, "t"), filepath.Join(ws, "hosttree")); err != nil {
		t.Logf("rename into the workspace: %v (another file system: copied instead)", err)
		if err := os.CopyFS(filepath.Join(ws, "hosttree"), os.DirFS(filepath.Join(outside, "t"))); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/b/c/d/.env", "moved/s/.env", "fromtmp/y/.env", "hosttree/u/.env"} {
		testenv.Poll(t, time.Minute, "toold marking "+f, func() bool { return fanotifyMarks(filepath.Join(ws, f)) })
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Later commands, by path and through the hard link, and by renaming
	// a watched directory away (into node_modules, not watched) and back.
	later := run(`for f in a/b/c/d/$E hl.txt moved/s/$E fromtmp/y/$E hosttree/u/$E; do echo "== $f"; cat "$f" 2>&1; done
mv a node_modules/a 2>&1 && cat node_modules/a/b/c/d/$E 2>&1; mv node_modules/a a 2>&1
mkdir -p vendor; mv moved vendor/moved 2>&1 && cat vendor/moved/s/$E 2>&1; mv vendor/moved moved 2>&1
cp hl.txt copy.txt 2>&1; cat copy.txt 2>&1; echo END`)
	var seen string
	testenv.Poll(t, time.Minute, "the watcher's end", func() bool {
		res, _ := x.call("wait"+strconv.Itoa(int(time.Now().UnixNano())), "get_output", mustJSON(t, map[string]any{"process_id": procID, "wait_ms": 500}))
		seen += text(res)
		return strings.Contains(seen, "DONE")
	})
	t.Logf("later command:\n%s\nwatcher:\n%.2000s", later, seen)
	for _, c := range []string{c1, c2, c3, c4} {
		if strings.Contains(later, c) {
			t.Errorf("a later command read the secret %s:\n%s", c, later)
		}
		if strings.Contains(seen, c) {
			t.Errorf("a command running meanwhile read the secret %s:\n%.3000s", c, seen)
		}
	}
	if !strings.Contains(later, "END") {
		t.Errorf("the later command did not run to its end:\n%s", later)
	}
}

// A command that makes a new directory and writes a .env in it at once
// sometimes cannot read it back (1 command in 20 here, load ~12):
// docs/terminal.md says a file a command creates itself "is its own:
// marked with its pid namespace as owner, readable to it". The guard
// watches a directory that appears with the owner of the process that
// made it (SecretGuard.onNotify: g.owner(m.Pid)); when that process (mkdir
// -p) has exited by the time the event is read, isCommand cannot tell, the
// owner is 0, and the .env the shell already wrote in it, found by the
// directory's read (watchTree, fresh), is marked as a person's secret:
// refused to every command, its creator too (and a later event naming the
// creator cannot give it back: mark keeps owner 0 when owners differ). It
// fails closed — no secret leaks — but the promise does not hold:
// mkdir -p cfg && cp .env.example cfg/.env && . cfg/.env fails with EPERM
// now and then. Not fixed: a dead creator's pid namespace cannot be read
// back from its pid (FAN_REPORT_PIDFD does not keep it either); a fix
// needs the creator's namespace at the event (or an owner taken from the
// directory's other events), a change to the guard's design.
func TestAttackSecretGuardOwnFileInNewDir(t *testing.T) {
	t.Skip("defect in pkg/sandbox's secret guard, reported to the lead: a command's own .env in a directory it just made is sometimes refused to it (the directory's creator exited before its event was read: owner unknown, the file found by the directory's read marked as a person's)")
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "a6-own"}}})
	if w, err := x.s.Recv(); err != nil || w.GetWelcome() == nil {
		t.Fatalf("welcome: %v %v", w, err)
	}
	for i := range 5 {
		c := "A6-own-" + randomHex(t, 8)
		dir := "n" + strconv.Itoa(i) + "/b/c/d"
		res, _ := x.call("own"+strconv.Itoa(i), "run_command", mustJSON(t, map[string]any{"command": hideEnv + `mkdir -p ` + dir + ` && echo ` + c + ` > ` + dir + `/$E && cat ` + dir + `/$E`}))
		if out := text(res); !strings.Contains(out, c) {
			t.Errorf("run %d: the command could not read back the .env it wrote in a new directory:\n%s", i, out)
		}
	}
}
