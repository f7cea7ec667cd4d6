package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/workspace"
)

// FuzzResolve resolves any path in a workspace with symlinks that lead out,
// in and around: resolution fails with a typed error or says where the path
// lands, Inside exactly when that is the workspace or below it, and Rel
// names the same place.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/etc/passwd", "out/../..", "in/./sub/../../a", "loop", "loop/x", "", ".",
		"out", "out/new", "a//b/", "\x00", "dangling/x", "up/up/up"} {
		f.Add(s)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws + "/a/b", ws + "/sub", outside + "/deep"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{"out": outside, "in": "a", "loop": "loop2", "loop2": "loop",
		"dangling": outside + "/missing", "up": "..", "a/b/root": "/"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			f.Fatal(err)
		}
	}
	w, err := workspace.Open(ws)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { w.Close() })
	f.Fuzz(func(t *testing.T, p string) {
		loc, err := w.Resolve(p)
		if err != nil {
			var e *errdefs.Error
			if !errors.As(err, &e) {
				t.Fatalf("Resolve(%q): untyped error %T %v", p, err, err)
			}
			return
		}
		if !filepath.IsAbs(loc.Abs) || filepath.Clean(loc.Abs) != loc.Abs {
			t.Fatalf("Resolve(%q).Abs = %q: not absolute and clean", p, loc.Abs)
		}
		inside := loc.Abs == ws || strings.HasPrefix(loc.Abs, ws+"/")
		if loc.Inside != inside {
			t.Fatalf("Resolve(%q) = %q, Inside %v", p, loc.Abs, loc.Inside)
		}
		if inside && filepath.Join(ws, filepath.FromSlash(loc.Rel)) != loc.Abs {
			t.Fatalf("Resolve(%q): Rel %q does not name %q", p, loc.Rel, loc.Abs)
		}
		if !inside && loc.Rel != "" {
			t.Fatalf("Resolve(%q): Rel %q outside the workspace", p, loc.Rel)
		}
	})
}
