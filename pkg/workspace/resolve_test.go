package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/workspace"
)

func TestResolve(t *testing.T) {
	base := t.TempDir()
	base, _ = filepath.EvalSymlinks(base)
	ws := filepath.Join(base, "ws")
	out := filepath.Join(base, "out")
	for _, d := range []string{"ws/a/b", "ws/c", "out/deep"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, "a/b/f.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(out, "secret"), nil, 0o644)
	os.Symlink(out, filepath.Join(ws, "to-out"))                        // absolute link out
	os.Symlink("../../out/secret", filepath.Join(ws, "c/secret"))       // relative link to a file out
	os.Symlink("a/b", filepath.Join(ws, "ab"))                          // link inside
	os.Symlink("loop2", filepath.Join(ws, "loop1"))                     // a loop
	os.Symlink("loop1", filepath.Join(ws, "loop2"))                     //
	os.Symlink(filepath.Join(base, "ws"), filepath.Join(base, "alias")) // the workspace through a symlink
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("fifo", filepath.Join(ws, "to-fifo")) // a link to a FIFO

	w, err := workspace.Open(filepath.Join(base, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tests := []struct {
		path   string
		abs    string
		inside bool
		rel    string
		exists bool
		errIs  error
	}{
		{path: "a/b/f.txt", abs: ws + "/a/b/f.txt", inside: true, rel: "a/b/f.txt", exists: true},
		{path: "", abs: ws, inside: true, rel: ".", exists: true},
		{path: "new/file.go", abs: ws + "/new/file.go", inside: true, rel: "new/file.go"},
		{path: "a/../c", abs: ws + "/c", inside: true, rel: "c", exists: true},
		{path: "..", abs: base, exists: true},
		{path: "../out/secret", abs: out + "/secret", exists: true},
		{path: "a/../../out", abs: out, exists: true},
		{path: ws + "/a", abs: ws + "/a", inside: true, rel: "a", exists: true},
		{path: base + "/alias/a", abs: ws + "/a", inside: true, rel: "a", exists: true},
		{path: "/etc/passwd", abs: "/etc/passwd", exists: true},
		{path: "/", abs: "/", exists: true},
		{path: "to-out/secret", abs: out + "/secret", exists: true},
		{path: "to-out/new", abs: out + "/new"},
		{path: "c/secret", abs: out + "/secret", exists: true},
		// ".." after a symlink goes to the target's parent, as the kernel does.
		{path: "ab/..", abs: ws + "/a", inside: true, rel: "a", exists: true},
		{path: "to-out/deep/../..", abs: base, exists: true},
		{path: "to-fifo", abs: ws + "/fifo", inside: true, rel: "fifo", exists: true},
		{path: "to-fifo/..", abs: ws, inside: true, rel: ".", exists: true},
		{path: "loop1", errIs: errdefs.ErrFailed},
		{path: "a/b/f.txt/x", errIs: errdefs.ErrFailed},
		{path: "a\x00b", errIs: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			loc, err := w.Resolve(tt.path)
			if tt.errIs != nil {
				if !errors.Is(err, tt.errIs) {
					t.Fatalf("err = %v, want %v", err, tt.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if loc.Abs != tt.abs || loc.Inside != tt.inside || loc.Rel != tt.rel || loc.Exists != tt.exists {
				t.Fatalf("got %+v, want abs=%s inside=%v rel=%q exists=%v", loc, tt.abs, tt.inside, tt.rel, tt.exists)
			}
			// Type is what is at Abs (no symlink in it), 0 when nothing is.
			var st syscall.Stat_t
			want := uint32(0)
			if syscall.Lstat(tt.abs, &st) == nil {
				want = st.Mode & syscall.S_IFMT
			}
			if loc.Type != want {
				t.Fatalf("Type = %#o, want %#o (%+v)", loc.Type, want, loc)
			}
		})
	}
}

func TestRootFor(t *testing.T) {
	base := t.TempDir()
	base, _ = filepath.EvalSymlinks(base)
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(filepath.Join(out, "d"), 0o755)
	os.WriteFile(filepath.Join(out, "d", "f"), []byte("outside"), 0o644)
	w, _ := workspace.Open(ws)
	defer w.Close()

	loc, _ := w.Resolve(filepath.Join(out, "d", "f"))
	root, name, closeFn, err := w.RootFor(loc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := root.ReadFile(name)
	closeFn()
	if err != nil || string(b) != "outside" {
		t.Fatalf("read through the outside root: %q %v", b, err)
	}

	// The directory is swapped for a symlink after the check: RootFor
	// refuses instead of following it.
	os.Rename(filepath.Join(out, "d"), filepath.Join(out, "d.real"))
	os.Symlink("/etc", filepath.Join(out, "d"))
	if _, _, _, err := w.RootFor(loc); err == nil {
		t.Fatal("RootFor followed a symlink swapped in after the check")
	}

	in, _ := w.Resolve("x")
	root, name, closeFn, err = w.RootFor(in)
	if err != nil || root != w.Root() || name != "x" {
		t.Fatalf("inside: %v %q %v", root, name, err)
	}
	closeFn()
}

// TestLexical checks Lexical against Resolve: on a tree without symlinks
// they agree for every path without ".."; Lexical refuses the rest.
func TestLexical(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "a/b"), 0o755)
	os.WriteFile(filepath.Join(ws, "a/b/f.txt"), nil, 0o644)
	w, err := workspace.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"a/b/f.txt", "./a//b/./f.txt", "a/b/", ".", "a/new.txt", ws, ws + "/a/b/f.txt", "/", base, base + "/x", "a/b/f.txt/"} {
		lex, ok := w.Lexical(p)
		res, err := w.Resolve(p)
		if !ok || err != nil {
			t.Errorf("%q: Lexical ok=%v, Resolve %v", p, ok, err)
			continue
		}
		res.Exists, res.Type = false, 0 // Lexical asks the disk nothing
		if lex != res {
			t.Errorf("%q: Lexical %+v, Resolve %+v", p, lex, res)
		}
	}
	for _, p := range []string{"", "a/../a/b/f.txt", "..", "a/b/..", "a\x00b"} {
		if lex, ok := w.Lexical(p); ok {
			t.Errorf("%q: Lexical took it: %+v", p, lex)
		}
	}
}
