package vcs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/vcs"
)

// repo is a git repository in a temp dir with a hermetic HOME (identity
// in ~/.gitconfig, as a person's would be).
type repo struct {
	t    *testing.T
	dir  string
	tool *vcs.VCS
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required (make test-deps installs it)")
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Test Person\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644)
	t.Setenv("HOME", home)
	dir := t.TempDir()
	r := &repo{t: t, dir: dir, tool: vcs.New(vcs.Options{Root: dir, Limits: tools.Limits{OutputBytes: 8192}})}
	r.git("init", "-q")
	return r
}

// git runs plain git in the repo, for setting it up.
func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (r *repo) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) call(op string, args map[string]any) (*tools.Result, error) {
	r.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	return r.tool.Run(context.Background(), &tools.Call{ID: "c", ConversationID: "conv", Tool: vcs.ToolName, Operation: op, Args: args}, nil)
}

func (r *repo) mustCall(op string, args map[string]any) *tools.Result {
	r.t.Helper()
	res, err := r.call(op, args)
	if err != nil {
		r.t.Fatalf("%s %v: %v", op, args, err)
	}
	return res
}

func entries(res *tools.Result) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range res.Structured["entries"].([]any) {
		m := e.(map[string]any)
		out[m["path"].(string)] = m
	}
	return out
}

func TestGitStatusStates(t *testing.T) {
	r := newRepo(t)
	st := r.mustCall("git_status", nil)
	if st.Structured["branch"] != "main" || !strings.Contains(st.Text, "no commits yet") {
		t.Fatalf("fresh repo: %v\n%s", st.Structured, st.Text)
	}
	r.write("a.txt", "one\ntwo\n")
	r.write("old name.txt", "rename me\n")
	r.write("bin.dat", "\x00\x01\x02binary")
	r.write("gone.txt", "delete me\n")
	r.git("add", ".")
	r.git("commit", "-qm", "first")
	// Dirty: a modification (unstaged), a staged rename, a deletion, a
	// binary change, an untracked file in a new directory, a name with
	// spaces and unicode.
	r.write("a.txt", "one\nTWO\n")
	r.git("mv", "old name.txt", "new näme.txt")
	os.Remove(filepath.Join(r.dir, "gone.txt"))
	r.write("bin.dat", "\x00\x01\x03binary!")
	r.write("new/dir/u.txt", "untracked\n")

	st = r.mustCall("git_status", nil)
	e := entries(st)
	for path, want := range map[string][3]string{
		"a.txt":         {"changed", ".", "M"},
		"new näme.txt":  {"renamed", "R", "."},
		"gone.txt":      {"changed", ".", "D"},
		"bin.dat":       {"changed", ".", "M"},
		"new/dir/u.txt": {"untracked", "", ""},
	} {
		got := e[path]
		if got == nil || got["kind"] != want[0] || (want[1] != "" && (got["index"] != want[1] || got["worktree"] != want[2])) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	if e["new näme.txt"]["orig_path"] != "old name.txt" {
		t.Errorf("rename orig: %v", e["new näme.txt"])
	}
	if !strings.Contains(st.Text, "old name.txt -> new näme.txt") || !strings.Contains(st.Text, "On branch main") {
		t.Errorf("text:\n%s", st.Text)
	}

	// Diffs: unstaged, staged (with the rename), binary, paths, a ref.
	d := r.mustCall("git_diff", nil)
	if !strings.Contains(d.Text, "-two\n+TWO") || !strings.Contains(d.Text, "Binary files a/bin.dat and b/bin.dat differ") {
		t.Errorf("diff:\n%s", d.Text)
	}
	files := d.Structured["files"].([]any)
	var sawBinary bool
	for _, f := range files {
		if m := f.(map[string]any); m["path"] == "bin.dat" && m["binary"] == true {
			sawBinary = true
		}
	}
	if !sawBinary {
		t.Errorf("numstat: %v", files)
	}
	d = r.mustCall("git_diff", map[string]any{"staged": true})
	if !strings.Contains(d.Text, "rename from old name.txt") {
		t.Errorf("staged diff:\n%s", d.Text)
	}
	d = r.mustCall("git_diff", map[string]any{"paths": []any{"a.txt"}})
	if strings.Contains(d.Text, "bin.dat") || !strings.Contains(d.Text, "a.txt") {
		t.Errorf("paths diff:\n%s", d.Text)
	}
	d = r.mustCall("git_diff", map[string]any{"ref": "HEAD"})
	if !strings.Contains(d.Text, "gone.txt") {
		t.Errorf("ref diff:\n%s", d.Text)
	}

	// Commit some paths; status then shows the rest.
	c := r.mustCall("git_commit", map[string]any{"message": "change a", "paths": []any{"a.txt", "gone.txt"}})
	if c.Structured["subject"] != "change a" {
		t.Fatalf("commit: %v", c.Structured)
	}
	log := r.mustCall("git_log", map[string]any{"n": 5})
	commits := log.Structured["commits"].([]any)
	if len(commits) != 2 || commits[0].(map[string]any)["subject"] != "change a" || commits[0].(map[string]any)["author"] != "Test Person" {
		t.Fatalf("log: %v", commits)
	}
	log = r.mustCall("git_log", map[string]any{"path": "bin.dat"})
	if n := len(log.Structured["commits"].([]any)); n != 1 {
		t.Fatalf("log of a path: %d commits", n)
	}
	sh := r.mustCall("git_show", map[string]any{"ref": "HEAD"})
	if !strings.Contains(sh.Text, "change a") || !strings.Contains(sh.Text, "+TWO") {
		t.Fatalf("show:\n%s", sh.Text)
	}
	sh = r.mustCall("git_show", map[string]any{"ref": "HEAD~1", "path": "a.txt"})
	if sh.Text != "one\ntwo\n" {
		t.Fatalf("show path: %q", sh.Text)
	}
	sh = r.mustCall("git_show", map[string]any{"ref": "HEAD", "path": "bin.dat"})
	if sh.Structured["binary"] != true {
		t.Fatalf("show binary: %v", sh.Text)
	}
	// Nothing staged: a clear error.
	r.git("stash", "-u", "-q")
	if _, err := r.call("git_commit", map[string]any{"message": "empty"}); !errors.Is(err, errdefs.ErrFailed) || !strings.Contains(err.Error(), "nothing is staged") {
		t.Fatalf("empty commit: %v", err)
	}

	// Detached HEAD.
	r.git("checkout", "-q", "--detach", "HEAD~1")
	st = r.mustCall("git_status", nil)
	if st.Structured["detached"] != true || !strings.Contains(st.Text, "HEAD detached at") {
		t.Fatalf("detached: %v\n%s", st.Structured, st.Text)
	}
}

func TestGitBranchAndConflict(t *testing.T) {
	r := newRepo(t)
	r.write("f.txt", "base\n")
	r.git("add", ".")
	r.git("commit", "-qm", "base")
	r.mustCall("git_branch", map[string]any{"action": "create", "name": "feature"})
	r.mustCall("git_branch", map[string]any{"action": "switch", "name": "feature"})
	r.write("f.txt", "feature\n")
	r.mustCall("git_commit", map[string]any{"message": "feature change", "paths": []any{"f.txt"}})
	list := r.mustCall("git_branch", nil)
	if !strings.Contains(list.Text, "* feature") || !strings.Contains(list.Text, "  main") {
		t.Fatalf("branches:\n%s", list.Text)
	}
	r.mustCall("git_branch", map[string]any{"action": "switch", "name": "main"})
	r.write("f.txt", "main\n")
	r.mustCall("git_commit", map[string]any{"message": "main change", "paths": []any{"f.txt"}})
	cmd := exec.Command("git", "merge", "feature")
	cmd.Dir = r.dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("merge did not conflict: %s", out)
	}
	st := r.mustCall("git_status", nil)
	if e := entries(st)["f.txt"]; e == nil || e["kind"] != "unmerged" || e["index"] != "U" {
		t.Fatalf("conflict: %v\n%s", st.Structured, st.Text)
	}
	if !strings.Contains(st.Text, "Unmerged (conflicts):\n  UU f.txt") {
		t.Fatalf("conflict text:\n%s", st.Text)
	}

	// Bad input: options smuggled as refs or names, paths outside.
	for _, c := range []struct {
		op   string
		args map[string]any
		want error
	}{
		{"git_branch", map[string]any{"action": "create", "name": "--help"}, errdefs.ErrInvalidArgument},
		{"git_branch", map[string]any{"action": "create", "name": "a..b"}, errdefs.ErrInvalidArgument},
		{"git_branch", map[string]any{"action": "switch"}, errdefs.ErrInvalidArgument},
		{"git_diff", map[string]any{"ref": "--output=/tmp/x"}, errdefs.ErrInvalidArgument},
		{"git_log", map[string]any{"ref": "-p"}, errdefs.ErrInvalidArgument},
		{"git_show", map[string]any{"ref": "HEAD:f.txt"}, errdefs.ErrInvalidArgument},
		{"git_diff", map[string]any{"paths": []any{"../outside"}}, errdefs.ErrDenied},
		{"git_commit", map[string]any{"message": "x", "paths": []any{"/etc/passwd"}}, errdefs.ErrDenied},
		{"git_show", map[string]any{"ref": "no-such-ref"}, errdefs.ErrFailed},
	} {
		if _, err := r.call(c.op, c.args); !errors.Is(err, c.want) {
			t.Errorf("%s %v: %v, want %v", c.op, c.args, err, c.want)
		}
	}
	if _, err := os.Stat("/tmp/x"); err == nil {
		t.Log("note: /tmp/x exists (not from this test unless the check failed)")
	}
}

func TestNotARepository(t *testing.T) {
	dir := t.TempDir()
	v := vcs.New(vcs.Options{Root: dir})
	_, err := v.Run(context.Background(), &tools.Call{ID: "c", Tool: vcs.ToolName, Operation: "git_status", Args: map[string]any{}}, nil)
	if !errors.Is(err, errdefs.ErrFailed) || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("%v", err)
	}
}

// TestHostileRepoConfig: a repository whose config (and attributes, and an
// included file, and hooks) names programs for everything git could run.
// Plain git runs them (the control proves the trap works); no operation
// of the tool runs any.
func TestHostileRepoConfig(t *testing.T) {
	r := newRepo(t)
	marks := t.TempDir()
	trap := filepath.Join(marks, "trap.sh")
	os.WriteFile(trap, []byte("#!/bin/sh\necho \"$(basename \"$0\") $*\" >> "+filepath.Join(marks, "ran")+"\ncat\n"), 0o755)
	hooks := t.TempDir()
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change", "fsmonitor-watchman"} {
		os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\necho hook "+h+" >> "+filepath.Join(marks, "ran")+"\n"), 0o755)
		os.WriteFile(filepath.Join(r.dir, ".git", "hooks", h), []byte("#!/bin/sh\necho githook "+h+" >> "+filepath.Join(marks, "ran")+"\n"), 0o755)
	}
	r.write("f.txt", "hello\n")
	r.write("img.bin", "\x00bin")
	r.git("add", ".")
	r.git("commit", "-qm", "base", "--no-verify")
	included := filepath.Join(marks, "included.config")
	os.WriteFile(included, []byte(fmt.Sprintf("[filter \"inc\"]\n\tclean = %[1]s inc-clean\n\tsmudge = %[1]s inc-smudge\n\trequired = true\n", trap)), 0o644)
	cfg := fmt.Sprintf(`[core]
	fsmonitor = %[1]s
	sshCommand = %[1]s ssh
	pager = %[1]s pager
	editor = %[1]s editor
	askPass = %[1]s askpass
	gitProxy = %[1]s
	hooksPath = %[2]s
	worktree = /
[alias]
	status = !%[1]s alias-status
	st = !%[1]s alias-st
[pager]
	status = %[1]s pager-status
	diff = %[1]s pager-diff
	log = %[1]s pager-log
[diff]
	external = %[1]s diff-external
[diff "evil"]
	command = %[1]s diff-command
	textconv = %[1]s textconv
[merge "evil"]
	driver = %[1]s merge-driver
[filter "evil"]
	clean = %[1]s clean
	smudge = %[1]s smudge
	process = %[1]s process
	required = true
[commit]
	gpgSign = true
[log]
	showSignature = true
[gpg]
	program = %[1]s gpg
[credential]
	helper = !%[1]s credential
[sequence]
	editor = %[1]s sequence-editor
[include]
	path = %[3]s
`, trap, hooks, included)
	f, err := os.OpenFile(filepath.Join(r.dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(cfg)
	f.Close()
	r.write(".gitattributes", "*.txt filter=evil diff=evil merge=evil\n*.bin filter=inc diff=evil\n")
	os.WriteFile(filepath.Join(r.dir, ".git", "info", "attributes"), []byte("* filter=evil diff=evil\n"), 0o644)
	r.write("f.txt", "hello changed\n")
	r.write("img.bin", "\x00bin changed")
	ran := func() string {
		b, _ := os.ReadFile(filepath.Join(marks, "ran"))
		return string(b)
	}

	// Control: plain git falls into the traps.
	ctl := exec.Command("git", "diff")
	ctl.Dir = r.dir
	ctl.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	ctl.CombinedOutput()
	if ran() == "" {
		t.Fatal("control: plain git diff ran no trap; the test proves nothing")
	}
	os.Remove(filepath.Join(marks, "ran"))

	for _, c := range []struct {
		op   string
		args map[string]any
	}{
		{"git_status", nil},
		{"git_diff", nil},
		{"git_diff", map[string]any{"staged": true}},
		{"git_diff", map[string]any{"ref": "HEAD"}},
		{"git_log", map[string]any{"n": 3}},
		{"git_show", nil},
		{"git_show", map[string]any{"path": "f.txt"}},
		{"git_branch", nil},
		{"git_branch", map[string]any{"action": "create", "name": "side"}},
		{"git_commit", map[string]any{"message": "commit through the traps", "paths": []any{"f.txt", "img.bin", ".gitattributes"}}},
		{"git_branch", map[string]any{"action": "switch", "name": "side"}},
		{"git_branch", map[string]any{"action": "switch", "name": "main"}},
		{"git_log", map[string]any{"n": 1}},
		{"git_show", map[string]any{"ref": "HEAD"}},
	} {
		res, err := r.call(c.op, c.args)
		if err != nil {
			t.Fatalf("%s %v: %v", c.op, c.args, err)
		}
		if got := ran(); got != "" {
			t.Fatalf("%s %v ran a program from the repository's config:\n%s", c.op, c.args, got)
		}
		if c.op == "git_commit" && res.Structured["subject"] != "commit through the traps" {
			t.Fatalf("commit: %v", res.Text)
		}
	}
	// core.worktree = / is ignored: the work tree is the workspace.
	st, err := r.call("git_status", nil)
	if err != nil || strings.Contains(st.Text, "etc/") || strings.Contains(st.Text, "usr/") {
		t.Fatalf("status with core.worktree=/: %v\n%.500s", err, st.Text)
	}
	// The content committed is the file's own (no clean filter applied).
	if got := r.git("show", "HEAD:f.txt"); got != "hello changed\n" {
		t.Fatalf("committed content %q", got)
	}
}

// TestHooksWhenConfigured: with Hooks, the repository's hooks (pre-commit
// here) run, so the option works; without, they do not.
func TestHooksWhenConfigured(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		r := newRepo(t)
		marks := t.TempDir()
		os.WriteFile(filepath.Join(r.dir, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch "+filepath.Join(marks, "ran")+"\n"), 0o755)
		r.tool = vcs.New(vcs.Options{Root: r.dir, Hooks: hooks})
		r.write("f.txt", "x\n")
		r.mustCall("git_commit", map[string]any{"message": "m", "paths": []any{"f.txt"}})
		_, err := os.Stat(filepath.Join(marks, "ran"))
		if ran := err == nil; ran != hooks {
			t.Fatalf("hooks %v: post-commit ran %v", hooks, ran)
		}
	}
}

// TestSubmodules: git_commit stages a submodule by its commit (a moved
// HEAD is committed) without running git in it — nor do git_status,
// git_diff and git_commit's own status — so a filter its own config names
// never runs; and a nested repository that is no submodule is refused,
// not staged as a gitlink.
func TestSubmodules(t *testing.T) {
	r := newRepo(t)
	mark := filepath.Join(t.TempDir(), "ran")
	r.write("a.txt", "a\n")
	r.write("lib/f", "f\n")
	r.git("-C", "lib", "init", "-q")
	r.git("-C", "lib", "add", "f")
	r.git("-C", "lib", "commit", "-qm", "lib")
	r.git("add", "a.txt", "lib")
	r.git("commit", "-qm", "first")
	r.git("-C", "lib", "config", "filter.x.clean", "sh -c 'echo ran >> "+mark+"; cat'")
	r.write("lib/.gitattributes", "* filter=x\n")
	// A change of time only: git status in lib would hash f again,
	// through the filter.
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(r.dir, "lib", "f"), old, old)
	r.write("a.txt", "a\nb\n")

	ran := func(step string) {
		t.Helper()
		if b, err := os.ReadFile(mark); err == nil {
			t.Fatalf("%s: the submodule's filter ran:\n%s", step, b)
		}
	}
	r.mustCall("git_status", map[string]any{})
	ran("git_status")
	r.mustCall("git_diff", map[string]any{})
	ran("git_diff")
	r.mustCall("git_commit", map[string]any{"message": "a and lib", "paths": []any{"a.txt", "lib"}})
	ran("git_commit")
	if _, err := r.call("git_commit", map[string]any{"message": "nothing", "paths": []any{"lib"}}); err == nil {
		t.Fatal("git_commit of an unchanged submodule committed")
	}
	ran("git_commit with nothing to commit")
	// The person's commit in lib (their git runs the filter).
	r.git("-C", "lib", "commit", "-q", "--allow-empty", "-m", "moved")
	os.Remove(mark)
	os.Chtimes(filepath.Join(r.dir, "lib", "f"), old, old)
	head := strings.TrimSpace(r.git("-C", "lib", "rev-parse", "HEAD"))
	r.mustCall("git_commit", map[string]any{"message": "bump lib", "paths": []any{"lib"}})
	ran("git_commit of a moved submodule")
	if got := r.git("ls-tree", "HEAD", "lib"); !strings.Contains(got, "160000 commit "+head) {
		t.Fatalf("lib's gitlink is not its new HEAD %s: %s", head, got)
	}

	// A submodule removed from the work tree: its deletion is staged.
	os.RemoveAll(filepath.Join(r.dir, "lib"))
	r.mustCall("git_commit", map[string]any{"message": "drop lib", "paths": []any{"lib"}})
	if got := r.git("ls-tree", "HEAD", "lib"); got != "" {
		t.Fatalf("lib is still in HEAD after its removal was committed: %s", got)
	}

	// A repository of its own, not a submodule.
	r.write("nested/x", "x\n")
	r.git("-C", "nested", "init", "-q")
	r.write("b.txt", "b\n")
	for _, paths := range [][]any{{"nested"}, {"."}, {"b.txt", "nested/"}} {
		_, err := r.call("git_commit", map[string]any{"message": "nested", "paths": paths})
		if !errors.Is(err, errdefs.ErrDenied) {
			t.Errorf("git_commit of %v: %v, want denied", paths, err)
		}
	}
	if got := r.git("ls-files", "--stage"); strings.Contains(got, "nested") || strings.Contains(got, "b.txt") {
		t.Fatalf("a refused commit staged:\n%s", got)
	}
}
