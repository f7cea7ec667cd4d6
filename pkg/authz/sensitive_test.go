package authz

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
)

func TestOwnProc(t *testing.T) {
	pid := os.Getpid()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc")
	}
	tid := ents[len(ents)-1].Name()
	m, err := NewSensitiveMatcher("/ws", "/home/u", nil) // no patterns: only toold's own entry
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/proc/self", true},
		{"/proc/self/environ", true},
		{"/proc/thread-self/mem", true},
		{fmt.Sprintf("/proc/%d", pid), true},
		{fmt.Sprintf("/proc/%d/fd/3", pid), true},
		{fmt.Sprintf("/proc/%d/cwd", pid), true},
		{fmt.Sprintf("/proc/%d/root/etc/passwd", pid), true},
		{"/proc/" + tid + "/environ", true},
		{fmt.Sprintf("/proc/%d/../%d/mem", pid, pid), true},
		{"/proc/1/status", pid == 1},
		{"/proc/cpuinfo", false},
		{"/proc", false},
		{"/proc/selfish", false},
		{"/procself/environ", false},
		{"/ws/proc/self/environ", false},
		{"/proc/$PPID/environ", true},
		{"/proc/[0-9]*/fd", true},
	} {
		if _, got := m.Match(c.path); got != c.want {
			t.Errorf("Match(%q) = %v, want %v", c.path, got, c.want)
		}
	}
	def, err := NewSensitiveMatcher("/ws", "/home/u", DefaultSensitive())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/proc/1/environ", "/proc/1/task/1/environ", "/proc/1/task/1/mem", "/proc/1/mem"} {
		if !def.Sensitive(p) {
			t.Errorf("%s is not sensitive", p)
		}
	}
}

func TestSensitiveFileIndex(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := base+"/ws", base+"/home"
	for _, d := range []string{ws + "/sub", home + "/.ssh"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(home + "/.ssh/id_rsa")
	write(ws + "/.env")
	write(ws + "/plain")
	m, err := NewSensitiveMatcher(ws, home, DefaultSensitive())
	if err != nil {
		t.Fatal(err)
	}
	stat := func(p string) Opened {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return Opened{Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Regular: true, Ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec)}
	}
	check := func(p string) error { return m.CheckOpened(&Use{Abs: p, Given: p}, stat(p)) }

	// A file with one link is never looked up.
	if err := check(ws + "/plain"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, link string }{
		{home + "/.ssh/id_rsa", ws + "/key.txt"},
		{ws + "/.env", ws + "/sub/notes.txt"},
	} {
		if err := os.Link(c.target, c.link); err != nil {
			t.Fatal(err)
		}
		err := check(c.link)
		if !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("%s (a link to %s): %v", c.link, c.target, err)
		}
	}
	// A link between two plain files is fine.
	if err := os.Link(ws+"/plain", ws+"/sub/plain2"); err != nil {
		t.Fatal(err)
	}
	if err := check(ws + "/sub/plain2"); err != nil {
		t.Fatal(err)
	}
	// Renaming a plain file's other name to a sensitive one changes its
	// ctime, so the index is built again and sees it.
	if err := os.Rename(ws+"/plain", ws+"/server.pem"); err != nil {
		t.Fatal(err)
	}
	if err := check(ws + "/sub/plain2"); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("after the rename: %v", err)
	}

	// Past indexMax entries the index is incomplete, and a multi-linked
	// file it does not know is refused.
	defer func(n int) { indexMax = n }(indexMax)
	indexMax = 1
	m2, err := NewSensitiveMatcher(ws, home, DefaultSensitive())
	if err != nil {
		t.Fatal(err)
	}
	err = m2.CheckOpened(&Use{Abs: ws + "/sub/plain2"}, stat(ws+"/sub/plain2"))
	if !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("incomplete index: %v", err)
	}
}

// BenchmarkSensitiveIndex builds the index of sensitive files over
// GOROOT/src as the workspace (no multi-linked files there: the cost is the
// walk), against a walk of the same tree that only lists it (the baseline).
func BenchmarkSensitiveIndex(b *testing.B) {
	src := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(filepath.Join(src, "runtime")); err != nil {
		b.Skip("GOROOT/src not found")
	}
	b.Run("walk-baseline", func(b *testing.B) {
		for b.Loop() {
			filepath.WalkDir(src, func(string, fs.DirEntry, error) error { return nil })
		}
	})
	b.Run("index", func(b *testing.B) {
		m, err := NewSensitiveMatcher(src, b.TempDir(), DefaultSensitive())
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, complete := m.buildIndex(); !complete {
				b.Fatal("incomplete")
			}
		}
	})
}

// A hard link to a sensitive file, opened (two links) and removed again
// before the index is built (one link): the opened file is still known for
// what it is. The index once held multi-linked files only, so it missed
// the file whose other link had gone by the time it looked.
func TestSensitiveFileIndexLinkGone(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := base+"/ws", base+"/home"
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws+"/.env", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := NewSensitiveMatcher(ws, home, DefaultSensitive())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(ws+"/.env", ws+"/a.txt"); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(ws+"/a.txt", &st); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ws + "/a.txt"); err != nil {
		t.Fatal(err)
	}
	o := Opened{Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Regular: true, Ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec)}
	err = m.CheckOpened(&Use{Abs: ws + "/a.txt", Given: "a.txt"}, o)
	if !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("a.txt (a link to .env, since removed): %v", err)
	}
}
