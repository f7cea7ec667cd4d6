package fileops

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// gitRepo makes dir a git repository with one commit, and returns a
// function that runs the person's git in a directory of it, with an empty
// configuration of their own, as a person would after the agent's calls.
func gitRepo(t *testing.T, dir string) (git func(sub string, args ...string) (string, error)) {
	t.Helper()
	home := t.TempDir()
	git = func(sub string, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", filepath.Join(dir, sub)}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "one"}} {
		if out, err := git(".", args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return git
}

// TestGitDirWritesRefused plants what a person's git runs — core.fsmonitor,
// hooks, a .git file pointing elsewhere — by every route of the file tools
// into a real repository, then runs the person's git status outside any
// sandbox with a canary fsmonitor script: the canary never runs, the
// repository's files are unchanged, and the error says to use the
// version-control tool. The control case writes the same config directly
// and sees the canary run, so the check can fail.
func TestGitDirWritesRefused(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	canaryDir := t.TempDir()
	canary := filepath.Join(canaryDir, "ran")
	script := filepath.Join(canaryDir, "fsmonitor.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran >> "+canary+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := "[core]\n\tfsmonitor = " + script + "\n"
	jsonArgs := func(m map[string]any) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	patch := func(p string) string { return jsonArgs(map[string]any{"input": p}) }

	type route struct {
		name  string
		setup map[string]string // more files, made before the call (not by the tools)
		bare  string            // a directory made a bare repository before the call
		op    string
		args  string
		sub   string // where the person runs git status
	}
	routes := []route{
		{name: "write config", op: "write_file", args: jsonArgs(map[string]any{"path": ".git/config", "content": planted})},
		{name: "edit config", op: "edit_file", args: jsonArgs(map[string]any{"path": ".git/config", "old_string": "[core]", "new_string": strings.TrimSuffix(planted, "\n")})},
		{name: "patch update config", op: "apply_patch", args: patch("*** Begin Patch\n*** Update File: .git/config\n@@\n-[core]\n+[core]\n+\tfsmonitor = " + script + "\n*** End Patch\n")},
		{name: "patch add hook", op: "apply_patch", args: patch("*** Begin Patch\n*** Add File: .git/hooks/post-checkout\n+#!/bin/sh\n+echo ran >> " + canary + "\n*** End Patch\n")},
		{name: "create hook", op: "create_file", args: jsonArgs(map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho ran >> " + canary + "\n"})},
		{name: "through a symlinked directory", setup: map[string]string{"g": "->.git"}, op: "write_file", args: jsonArgs(map[string]any{"path": "g/config", "content": planted})},
		{name: "through a symlink to the file", setup: map[string]string{"c": "->.git/config"}, op: "write_file", args: jsonArgs(map[string]any{"path": "c", "content": planted})},
		{name: "dot-dot", setup: map[string]string{"sub/f": "x\n"}, op: "write_file", args: jsonArgs(map[string]any{"path": "sub/../.git/config", "content": planted})},
		{name: "move onto config", setup: map[string]string{"plant.cfg": planted}, op: "move_path", args: jsonArgs(map[string]any{"source": "plant.cfg", "destination": ".git/config", "overwrite": true})},
		{name: "move .git away", op: "move_path", args: jsonArgs(map[string]any{"source": ".git", "destination": "old-git"})},
		{name: "delete the index", op: "delete_path", args: jsonArgs(map[string]any{"path": ".git/index"})},
		{name: "make a directory", op: "make_dir", args: jsonArgs(map[string]any{"path": ".git/hooks2"})},
		{name: "gitdir file", bare: "evil", setup: map[string]string{"sub/f": "x\n"}, op: "write_file", args: jsonArgs(map[string]any{"path": "sub/.git", "content": "gitdir: ../evil\n"}), sub: "sub"},
		{name: "bare repository's config", bare: "bare", op: "write_file", args: jsonArgs(map[string]any{"path": "bare/config", "content": planted})},
		{name: "bare repository through a symlink", bare: "bare", setup: map[string]string{"b": "->bare"}, op: "write_file", args: jsonArgs(map[string]any{"path": "b/hooks/x/y", "content": "x"})},
		{name: "upper case", op: "write_file", args: jsonArgs(map[string]any{"path": ".GIT/config", "content": planted})},
	}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			os.Remove(canary)
			f, dir := newTool(t, tools.Limits{}, map[string]string{"main.go": "package main\n"})
			git := gitRepo(t, dir)
			writeTree(t, dir, r.setup)
			if r.bare != "" {
				if out, err := git(".", "init", "-q", "--bare", r.bare); err != nil {
					t.Fatalf("git init --bare: %v\n%s", err, out)
				}
				// What a command could have left there (a repository it
				// created is its own): the tools must not point git at it.
				if err := os.WriteFile(filepath.Join(dir, r.bare, "config"), []byte("[core]\n\tbare = false\n\tworktree = ..\n"+"\tfsmonitor = "+script+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			_, err := run(t, f, r.op, r.args)
			wantErr(t, err, errdefs.ErrDenied, "git directory", "git_commit")
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("the workspace changed:\nbefore %v\nafter  %v", before, after)
			}
			if out, err := git(r.sub, "status", "--porcelain"); err != nil {
				t.Fatalf("the person's git status: %v\n%s", err, out)
			}
			if _, err := os.Stat(canary); err == nil {
				t.Fatalf("the person's git status ran the planted fsmonitor")
			}
		})
	}

	t.Run("control", func(t *testing.T) {
		os.Remove(canary)
		_, dir := newTool(t, tools.Limits{}, map[string]string{"main.go": "package main\n"})
		git := gitRepo(t, dir)
		if err := os.WriteFile(filepath.Join(dir, ".git/config"), []byte(planted), 0o644); err != nil {
			t.Fatal(err)
		}
		git(".", "status", "--porcelain")
		if _, err := os.Stat(canary); err != nil {
			t.Fatalf("the canary fsmonitor did not run when planted directly: the test cannot fail")
		}
	})

	t.Run("work tree files stay writable", func(t *testing.T) {
		f, dir := newTool(t, tools.Limits{}, map[string]string{"main.go": "package main\n"})
		gitRepo(t, dir)
		for _, p := range []string{".gitattributes", ".gitignore", ".gitmodules", ".github/workflows/ci.yml", "git/config", "sub/.gitkeep", "x.git/f"} {
			mustRun(t, f, "write_file", jsonArgs(map[string]any{"path": p, "content": "x\n"}))
		}
	})
}
