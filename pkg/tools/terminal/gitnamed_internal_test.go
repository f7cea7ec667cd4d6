package terminal

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitIn runs the test's git in dir, without the machine's or the user's
// configuration.
func gitIn(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=p", "-c", "user.email=p@e", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func needGit(t testing.TB) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// TestIndexGitlinks reads the gitlinks of indexes git wrote: versions 2,
// 3 (an extended flag: intent to add) and 4 (prefix-compressed paths),
// SHA-1 and SHA-256, and a split index (through git ls-files).
func TestIndexGitlinks(t *testing.T) {
	needGit(t)
	lib := t.TempDir()
	gitIn(t, lib, "init", "-q", ".")
	gitIn(t, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	for _, c := range []struct {
		name string
		init []string
		prep [][]string
	}{
		{"v2", []string{"init", "-q"}, [][]string{{"update-index", "--index-version", "2"}}},
		{"v3", []string{"init", "-q"}, [][]string{{"add", "-N", "zz-intent"}, {"update-index", "--index-version", "3"}}},
		{"v4", []string{"init", "-q"}, [][]string{{"update-index", "--index-version", "4"}}},
		{"sha256", []string{"init", "-q", "--object-format=sha256"}, [][]string{{"update-index", "--index-version", "4"}}},
		{"split", []string{"init", "-q"}, [][]string{{"update-index", "--split-index"}, {"add", "a/later.txt"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, append(c.init, ".")...)
			for _, f := range []string{"a/one.txt", "a/later.txt", "zz-intent", "vendor/x/y.txt"} {
				os.MkdirAll(filepath.Join(ws, filepath.Dir(f)), 0o755)
				os.WriteFile(filepath.Join(ws, f), []byte(f), 0o644)
			}
			gitIn(t, ws, "add", "a/one.txt", "vendor/x/y.txt")
			if c.name != "sha256" {
				gitIn(t, ws, "submodule", "add", "-q", lib, "vendor/deep/dep")
				gitIn(t, ws, "submodule", "add", "-q", lib, "node_modules/dep")
			} else {
				// git submodule refuses mixing hash algorithms: a gitlink by hand.
				gitIn(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 32)+",vendor/deep/dep")
				gitIn(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("cd", 32)+",node_modules/dep")
			}
			for _, p := range c.prep {
				gitIn(t, ws, p...)
			}
			var n gitNamedCache
			n.found = true
			n.git, _ = exec.LookPath("git")
			r := n.repo(filepath.Join(ws, ".git"), ws)
			links := slices.Sorted(slices.Values(r.links))
			if want := []string{"node_modules/dep", "vendor/deep/dep"}; !slices.Equal(links, want) {
				t.Fatalf("gitlinks %v, want %v", links, want)
			}
		})
	}
	if _, err := indexGitlinks([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05"+strings.Repeat("\x00", 20)), 20); err == nil {
		t.Fatal("a truncated index read without an error")
	}
}

// TestGitNamedPaths: a repository with a submodule below vendor/ (the
// walk does not enter it), one not populated, a nested submodule inside
// the first, and a configuration that names a hooks directory, a filter
// script run through sh, an fsmonitor script and an included file of the
// work tree — and a path outside the workspace, and the work tree itself,
// which are not made read-only.
func TestGitNamedPaths(t *testing.T) {
	needGit(t)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	lib := t.TempDir()
	gitIn(t, lib, "init", "-q", ".")
	gitIn(t, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	inner := t.TempDir()
	gitIn(t, inner, "init", "-q", ".")
	gitIn(t, inner, "submodule", "add", "-q", lib, "third_party/lib")
	gitIn(t, inner, "commit", "-q", "-m", "inner")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	gitIn(t, ws, "init", "-q", ".")
	gitIn(t, ws, "submodule", "add", "-q", inner, "vendor/inner")
	gitIn(t, ws, "-C", "vendor/inner", "submodule", "update", "-q", "--init")
	gitIn(t, ws, "submodule", "add", "-q", lib, "node_modules/empty")
	gitIn(t, ws, "commit", "-q", "-m", "top")
	gitIn(t, ws, "submodule", "deinit", "-q", "node_modules/empty")
	for f, body := range map[string]string{".husky/_/h": "", "scripts/clean.sh": "cat", "scripts/fsmon.sh": "", "local.gitconfig": "[diff \"x\"]\n\ttextconv = scripts/conv.sh\n", "scripts/conv.sh": ""} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(ws, f), []byte(body), 0o755)
	}
	os.WriteFile(filepath.Join(outside, "tool.sh"), nil, 0o755)
	for _, kv := range [][2]string{
		{"core.hooksPath", ".husky/_"}, {"filter.t.clean", "sh scripts/clean.sh %f"}, {"core.fsmonitor", "scripts/fsmon.sh"},
		{"include.path", "../local.gitconfig"}, {"diff.y.textconv", outside + "/tool.sh"}, {"alias.here", "!cd . && ls"},
	} {
		gitIn(t, ws, "config", kv[0], kv[1])
	}
	var h hiddenCache
	defer h.close()
	_, gits := h.get(ws, nameSensitivity{}, filepath.Join(t.TempDir(), dirPrefix+"own"), []string{ws}, nil)
	var n gitNamedCache
	got := slices.Sorted(slices.Values(n.get(ws, gits, []string{ws})))
	want := []string{
		ws + "/.husky", ws + "/.husky/_", ws + "/local.gitconfig", ws + "/node_modules/empty",
		ws + "/scripts/clean.sh", ws + "/scripts/conv.sh", ws + "/scripts/fsmon.sh",
		ws + "/vendor/inner/.git", ws + "/vendor/inner/third_party/lib/.git",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read-only beside the git directories:\n got %v\nwant %v", got, want)
	}

	// A change of the configuration is seen by the next command; an
	// unchanged one is not read again.
	r := n.repos[filepath.Join(ws, ".git")]
	if n.get(ws, gits, []string{ws}); n.repos[filepath.Join(ws, ".git")] != r {
		t.Fatal("an unchanged configuration was read again")
	}
	gitIn(t, ws, "config", "--unset", "core.fsmonitor")
	if got := n.get(ws, gits, []string{ws}); slices.Contains(got, ws+"/scripts/fsmon.sh") {
		t.Fatalf("a removed fsmonitor is still read-only: %v", got)
	}
	// A submodule removed from the index is no longer in it.
	gitIn(t, ws, "rm", "-q", "--cached", "vendor/inner")
	if got := n.get(ws, gits, []string{ws}); slices.Contains(got, ws+"/vendor/inner/.git") {
		t.Fatalf("a submodule removed from the index is still read-only: %v", got)
	}
}

// BenchmarkGitNamed is the cost on a command's start path while nothing
// changed: the stats of the index and the configuration files of each
// repository (a top-level one with two submodules here).
func BenchmarkGitNamed(b *testing.B) {
	needGit(b)
	lib := b.TempDir()
	gitIn(b, lib, "init", "-q", ".")
	gitIn(b, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	gitIn(b, ws, "init", "-q", ".")
	for i := range 200 {
		os.WriteFile(filepath.Join(ws, "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+".txt"), []byte("x"), 0o644)
	}
	gitIn(b, ws, "add", "-A")
	gitIn(b, ws, "submodule", "add", "-q", lib, "vendor/a")
	gitIn(b, ws, "submodule", "add", "-q", lib, "node_modules/b")
	gitIn(b, ws, "config", "core.hooksPath", ".husky")
	gits := []string{ws + "/.git"}
	var n gitNamedCache
	if got := n.get(ws, gits, []string{ws}); len(got) != 2 {
		b.Fatalf("got %v", got)
	}
	b.ResetTimer()
	for range b.N {
		n.get(ws, gits, []string{ws})
	}
}
