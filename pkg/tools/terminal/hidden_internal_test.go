package terminal

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// nameSensitivity calls a path sensitive by its base name, as the
// policy's .env and key patterns do.
type nameSensitivity struct{}

func (nameSensitivity) Sensitive(p string) bool {
	b := filepath.Base(p)
	return b == ".env" || strings.HasSuffix(b, ".key")
}

// A walk of the workspace for secrets is reused for a moment, but never
// past a change of a name in a directory it read: a secret a person
// writes, renames into place or moves in with its directory right after
// a walk is in the very next command's masks; and an unchanged
// workspace's walk is reused.
func TestHiddenWalkSeesSecretsAddedSince(t *testing.T) {
	ws := t.TempDir()
	own := filepath.Join(t.TempDir(), dirPrefix+"own")
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "a", ".env"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	changes := []struct {
		name, want string
		do         func() error
	}{
		{"a .env written in the root", ".env", func() error { return os.WriteFile(filepath.Join(ws, ".env"), []byte("s"), 0o600) }},
		{"a key written deep", "a/b/deploy.key", func() error { return os.WriteFile(filepath.Join(ws, "a", "b", "deploy.key"), []byte("s"), 0o600) }},
		{"a file renamed to a key", "c/x.key", func() error {
			if err := os.WriteFile(filepath.Join(ws, "c", "notes"), []byte("s"), 0o600); err != nil {
				return err
			}
			return os.Rename(filepath.Join(ws, "c", "notes"), filepath.Join(ws, "c", "x.key"))
		}},
		{"a directory moved in", "c/moved/.env", func() error {
			d := filepath.Join(outside, "moved")
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, ".env"), []byte("s"), 0o600); err != nil {
				return err
			}
			return os.Rename(d, filepath.Join(ws, "c", "moved"))
		}},
	}
	var h hiddenCache
	defer h.close()
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			// A walk that would be reused (every directory watched).
			testenv.Poll(t, 10*time.Second, "a settled walk", func() bool {
				h.get(ws, nameSensitivity{}, own, nil, nil)
				return h.settled
			})
			before, _ := h.get(ws, nameSensitivity{}, own, nil, nil)
			if err := c.do(); err != nil {
				t.Fatal(err)
			}
			after, _ := h.get(ws, nameSensitivity{}, own, nil, nil)
			want := filepath.Join(ws, c.want)
			if slices.Contains(before, want) || !slices.Contains(after, want) {
				t.Fatalf("%s: masked before %v, after %v", c.want, before, after)
			}
		})
	}
	// Unchanged, a walk is reused: the same answer without a walk.
	testenv.Poll(t, 10*time.Second, "a settled walk", func() bool {
		h.get(ws, nameSensitivity{}, own, nil, nil)
		return h.settled
	})
	at := h.at
	h.get(ws, nameSensitivity{}, own, nil, nil)
	if h.at != at {
		t.Fatal("an unchanged workspace was walked again within hiddenTTL")
	}
}

// BenchmarkHiddenWalk measures what a command's start pays for the
// workspace's secrets in a tree of 2000 directories with 10 files each:
// a walk (with a watch on each directory), and the reuse of a walk (one
// read of the inotify instance, and an lstat per secret found).
func BenchmarkHiddenWalk(b *testing.B) {
	ws := b.TempDir()
	for i := range 2000 {
		d := filepath.Join(ws, "d"+string(rune('a'+i%26)), "x"+strings.Repeat("y", i/26%5), "n"+filepath.Base(b.TempDir()))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			os.WriteFile(filepath.Join(d, "f"+string(rune('a'+j))), nil, 0o644)
		}
	}
	own := filepath.Join(b.TempDir(), dirPrefix+"own")
	b.Run("walk", func(b *testing.B) {
		var h hiddenCache
		defer h.close()
		for b.Loop() {
			h.at = time.Time{}
			h.get(ws, nameSensitivity{}, own, nil, nil)
		}
	})
	b.Run("reuse", func(b *testing.B) {
		var h hiddenCache
		defer h.close()
		testenv.Poll(b, 10*time.Second, "a settled walk", func() bool {
			h.get(ws, nameSensitivity{}, own, nil, nil)
			return h.settled
		})
		for b.Loop() {
			if h.moved() || h.changed() {
				b.Fatal("the tree changed")
			}
		}
	})
}

// The walk finds the workspace's git directories: the top-level .git, a
// nested repository's, the git directory and common directory a .git file
// names inside a writable directory (a worktree's) and a .git linked to
// one, not one outside, not one below a directory it does not walk; and a repository made after a
// walk is in the next one.
func TestHiddenWalkFindsGitDirs(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	own := filepath.Join(t.TempDir(), dirPrefix+"own")
	for _, d := range []string{".git", "sub/.git", "repos/main.git/worktrees/wt", "wt", "far", "node_modules/x/.git", outside + "/elsewhere.git"} {
		if !filepath.IsAbs(d) {
			d = filepath.Join(ws, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, s := range map[string]string{
		"wt/.git":                               "gitdir: ../repos/main.git/worktrees/wt\n",
		"repos/main.git/worktrees/wt/commondir": "../..\n",
		"far/.git":                              "gitdir: " + outside + "/elsewhere.git\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A .git linked to a directory of the workspace, and one outside.
	if err := os.MkdirAll(filepath.Join(ws, "repos", "linked.git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"linked": "../repos/linked.git", "far-link": outside} {
		os.MkdirAll(filepath.Join(ws, link), 0o755)
		if err := os.Symlink(target, filepath.Join(ws, link, ".git")); err != nil {
			t.Fatal(err)
		}
	}
	var h hiddenCache
	defer h.close()
	_, gits := h.get(ws, nameSensitivity{}, own, []string{ws}, nil)
	want := []string{ws + "/.git", ws + "/sub/.git", ws + "/wt/.git", ws + "/repos/main.git/worktrees/wt", ws + "/repos/main.git", ws + "/repos/linked.git", ws + "/far/.git"}
	slices.Sort(gits)
	slices.Sort(want)
	if !slices.Equal(gits, want) {
		t.Fatalf("git directories %v, want %v", gits, want)
	}
	if err := os.MkdirAll(filepath.Join(ws, "new", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, gits = h.get(ws, nameSensitivity{}, own, []string{ws}, nil); !slices.Contains(gits, ws+"/new/.git") {
		t.Fatalf("a repository made after the walk is not in the next one: %v", gits)
	}
}
