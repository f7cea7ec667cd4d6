package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// gitGuard is a real toold in YOLO (default sandbox) whose workspace is a
// git repository with a commit and a nested repository with one, made by
// a person's git before toold's commands run.
type gitGuard struct {
	t       *testing.T
	d       *daemontest.Daemon
	c       *client
	ws      string
	outside string // a canary directory outside the workspace
}

func newGitGuard(t *testing.T, opts ...daemontest.Option) *gitGuard {
	t.Helper()
	if testing.Short() {
		t.Skip("runs git through toold's sandbox")
	}
	_, err := exec.LookPath("git")
	testenv.Need(t, err, "git")
	d := daemontest.Start(t, append([]daemontest.Option{daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" })}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	c, err := openClient(ctx, d, "gitguard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.s.CloseSend() })
	// What the judge asks about (writes into .git it sees, a commit) a
	// person approves: these tests are about the kernel.
	c.approve = true
	g := &gitGuard{t: t, d: d, c: c, ws: d.Workspace, outside: t.TempDir()}
	for _, dir := range []string{".", "nested"} {
		g.write(filepath.Join(dir, "README.md"), "hello "+dir+"\n")
		g.hostGit(dir, "init", "-q", ".")
		g.hostGit(dir, "add", "README.md")
		g.hostGit(dir, "commit", "-qm", "first in "+dir)
	}
	return g
}

func (g *gitGuard) write(rel, body string) {
	g.t.Helper()
	p := filepath.Join(g.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// hostGit is the person's git, outside any sandbox.
func (g *gitGuard) hostGit(dir string, args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=person", "-c", "user.email=p@example.com"}, args...)...)
	cmd.Dir = filepath.Join(g.ws, dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("the person's git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// run runs line through toold's run_command in dir and returns its exit
// code and result text.
func (g *gitGuard) run(dir, line string) (int, string) {
	g.t.Helper()
	var out bytes.Buffer
	res, _, err := g.c.call("run_command", map[string]any{"command": line, "working_dir": dir, "timeout": 120}, nil, &out)
	if err != nil {
		g.t.Fatalf("%s: %v", line, err)
	}
	text := ""
	for _, ct := range res.GetContent() {
		text += ct.GetText()
	}
	exit, ok := res.GetStructured().AsMap()["exit_code"].(float64)
	if !ok {
		g.t.Fatalf("%s: no exit code: %v\n%s", line, res.GetError(), text)
	}
	return int(exit), text
}

// TestGitReadsWorkSandboxedEndToEnd: git's reading commands work in a
// sandboxed command on a repository whose .git is read-only in its view —
// status (with a read-only index), diff, log, show, grep, blame — in the
// workspace's repository and a nested one.
func TestGitReadsWorkSandboxedEndToEnd(t *testing.T) {
	g := newGitGuard(t)
	for _, dir := range []string{".", "nested"} {
		g.write(filepath.Join(dir, "README.md"), "hello "+dir+"\nworld\n")
		for _, c := range []struct{ line, want string }{
			{"git status --short", "M README.md"},
			{"git status", "Changes not staged"},
			{"git diff", "+world"},
			{"git diff --stat HEAD", "README.md"},
			{"git log --oneline", "first in " + dir},
			{"git show --stat HEAD", "first in " + dir},
			{"git grep -n hello", "README.md:1:hello"},
			{"git blame README.md", "hello " + dir},
			{"git rev-parse --show-toplevel", filepath.Join(g.ws, dir)},
		} {
			code, text := g.run(dir, c.line+" 2>&1")
			if code != 0 || !strings.Contains(text, c.want) {
				t.Errorf("%s in %s: exit %d, want %q:\n%s", c.line, dir, code, c.want, text)
			}
			if strings.Contains(text, "hint:") {
				t.Errorf("%s in %s: a hint on a read:\n%s", c.line, dir, text)
			}
		}
	}
}

// TestGitDirReadOnlyEndToEnd: a sandboxed command cannot change the
// workspace's git directories — the top-level .git and a nested
// repository's present when it starts — by git or by any program, nor
// rename, remove or replace them; a git that must write fails with git's
// own error and the result says what to do instead; and the person's git
// status afterwards runs nothing the command meant to plant.
func TestGitDirReadOnlyEndToEnd(t *testing.T) {
	g := newGitGuard(t)
	head := g.hostGit(".", "rev-parse", "HEAD")
	mark := func(name string) string { return filepath.Join(g.outside, name) }
	planted := func(dir, name string) string {
		return fmt.Sprintf(`python3 -c "open('%s/.git/config','a').write('[core]\n\tfsmonitor = touch %s; false\n')"`, dir, mark(name))
	}
	for _, c := range []struct {
		name, dir, line string
	}{
		{"fsmonitor by python", ".", planted(".", "top")},
		{"fsmonitor of the nested repo", ".", planted("nested", "nested")},
		{"fsmonitor by git config", ".", "git config core.fsmonitor 'touch " + mark("config") + "; false'"},
		{"hook", ".", "printf '#!/bin/sh\\ntouch " + mark("hook") + "\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"},
		{"module config", ".", "mkdir -p .git/modules/x && printf '[core]\\n\\tfsmonitor = touch " + mark("module") + "; false\\n' > .git/modules/x/config"},
		{"gitlink to a planted repository", ".", "mkdir sub && cd sub && git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m s && " +
			planted(".", "gitlink") + " && cd .. && git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub"},
		{"rename and replace", ".", "mv .git gone; mkdir -p .git/hooks && printf '[core]\\n\\tfsmonitor = touch " + mark("replaced") + "; false\\n' > .git/config"},
		{"remove", ".", "rm -rf .git nested/.git"},
		{"rename the nested repository", ".", "mv nested moved; mv nested/.git nested/gone"},
	} {
		code, text := g.run(c.dir, c.line+" 2>&1")
		if code == 0 {
			t.Errorf("%s: the command succeeded:\n%s", c.name, text)
		}
		t.Logf("%s: exit %d\n%s", c.name, code, text)
	}
	// The person's git, after the commands, outside any sandbox, in the
	// repositories the person had. (sub is a repository the command made:
	// a person entering it runs what the command wrote, as they would
	// running a script it wrote — docs/policy.md.)
	for _, dir := range []string{".", "nested"} {
		cmd := exec.Command("git", "status", "--short")
		cmd.Dir = filepath.Join(g.ws, dir)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		cmd.Run()
	}
	g.hostGit(".", "commit", "-q", "--allow-empty", "-m", "the person's commit")
	if ents, _ := os.ReadDir(g.outside); len(ents) > 0 {
		t.Fatalf("the person's git ran what a command planted: %v", ents)
	}
	if got := g.hostGit(".", "rev-parse", "HEAD~1"); got != head {
		t.Fatalf("the repository's history changed: HEAD~1 %s, was %s", got, head)
	}
	for _, p := range []string{"gone", "moved", "nested/gone", ".git/modules/x"} {
		if _, err := os.Lstat(filepath.Join(g.ws, p)); err == nil {
			t.Errorf("%s was made from inside the sandbox", p)
		}
	}
	if out := g.hostGit(".", "ls-files", "--stage"); strings.Contains(out, "160000") {
		t.Errorf("a gitlink was added to the index:\n%s", out)
	}

	// A git that writes: git's own error, and the hint.
	g.write("README.md", "hello\nchanged\n")
	for _, line := range []string{"git -c user.name=a -c user.email=a@b commit -qam second", "git add README.md", "git tag v1", "git config user.name x", "git checkout -q -b side"} {
		code, text := g.run(".", line)
		if code == 0 || !strings.Contains(text, "Read-only file system") || !strings.Contains(text, "hint: the workspace's git directories are read-only") ||
			!strings.Contains(text, "git_commit") {
			t.Errorf("%s: exit %d, want git's read-only error and the hint:\n%s", line, code, text)
		}
	}
	// git stash fails on the read-only index without a word (exit 1): the
	// hint comes from its command line.
	if code, text := g.run(".", "git stash"); code == 0 || !strings.Contains(text, "hint: the workspace's git directories are read-only") {
		t.Errorf("git stash: exit %d, want the hint:\n%s", code, text)
	}
	if _, text := g.run(".", "git stash list"); strings.Contains(text, "hint:") {
		t.Errorf("git stash list got a hint:\n%s", text)
	}
	// Another program's write there gets the hint too; a write elsewhere
	// that fails does not.
	if _, text := g.run(".", `python3 -c "open('.git/x','w')"`); !strings.Contains(text, "hint: the workspace's git directories") {
		t.Errorf("python's write into .git: no hint:\n%s", text)
	}
	if _, text := g.run(".", "touch /usr/x"); strings.Contains(text, "git directories") {
		t.Errorf("a write outside the workspace got the git hint:\n%s", text)
	}
}

// TestVcsToolCommitsUnderReadOnlyGitEndToEnd: toold's version-control tool
// still commits (its git has the git directory writable), and runs none
// of what the repository's config and hooks name — planted by the person's
// own config here, as a hostile repository would have it.
func TestVcsToolCommitsUnderReadOnlyGitEndToEnd(t *testing.T) {
	g := newGitGuard(t)
	// In the workspace: writable by the sandboxed git, were it run.
	ran := filepath.Join(g.ws, "ran")
	trap := filepath.Join(g.outside, "trap.sh")
	os.WriteFile(trap, []byte("#!/bin/sh\necho \"$(basename \"$0\") $*\" >> "+ran+"\ncat\n"), 0o755)
	os.WriteFile(filepath.Join(g.ws, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\necho hook >> "+ran+"\n"), 0o755)
	os.WriteFile(filepath.Join(g.ws, ".git", "hooks", "post-commit"), []byte("#!/bin/sh\necho hook >> "+ran+"\n"), 0o755)
	f, err := os.OpenFile(filepath.Join(g.ws, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[core]\n\tfsmonitor = %[1]s fsmonitor\n\tpager = %[1]s pager\n\teditor = %[1]s editor\n[diff]\n\texternal = %[1]s diff\n[filter \"evil\"]\n\tclean = %[1]s clean\n\tsmudge = %[1]s smudge\n\trequired = true\n[user]\n\tname = person\n\temail = p@example.com\n", trap)
	f.Close()
	g.write(".gitattributes", "*.md filter=evil\n")
	g.write("README.md", "hello\nby the tool\n")
	var out bytes.Buffer
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"git_status", map[string]any{}},
		{"git_diff", map[string]any{}},
		{"git_commit", map[string]any{"message": "through the tool", "paths": []any{"README.md", ".gitattributes"}}},
		{"git_log", map[string]any{"n": 2}},
	} {
		out.Reset()
		res, _, err := g.c.call(call.tool, call.args, nil, &out)
		if err != nil || !res.GetSuccess() {
			t.Fatalf("%s: %v %v", call.tool, err, res.GetError())
		}
	}
	if got := strings.TrimSpace(g.hostGit(".", "log", "-1", "--format=%s")); got != "through the tool" {
		t.Fatalf("the tool's commit is not HEAD: %q", got)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Fatalf("the version-control tool ran what the repository names:\n%s", b)
	}
	// And a command still cannot write there after the tool did.
	if code, text := g.run(".", "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m again 2>&1"); code == 0 {
		t.Fatalf("a command committed:\n%s", text)
	}
}

// TestGitWritableOptionEndToEnd: terminal.git_writable lets commands write
// the workspace's .git (the operator's choice, with its risk).
func TestGitWritableOptionEndToEnd(t *testing.T) {
	g := newGitGuard(t, daemontest.WithConfig(func(c *config.Config) { c.Terminal.GitWritable = true }))
	g.write("README.md", "hello\nchanged\n")
	if code, text := g.run(".", "git -c user.name=a -c user.email=a@b commit -qam second 2>&1 && git log --oneline | wc -l"); code != 0 || !strings.Contains(text, "2") {
		t.Fatalf("git commit with git_writable: exit %d\n%s", code, text)
	}
}
