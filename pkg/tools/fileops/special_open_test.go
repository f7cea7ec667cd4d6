package fileops

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// openWatch reports the opens of the entries of directories (inotify
// IN_OPEN), as the kernel queued them.
type openWatch struct {
	fd  int
	wds map[int32]string // watch descriptor -> directory
	buf []byte
}

func newOpenWatch(t *testing.T, dirs ...string) *openWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	w := &openWatch{fd: fd, wds: map[int32]string{}, buf: make([]byte, 64<<10)}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN)
		if err != nil {
			t.Fatalf("inotify watch %s: %v", d, err)
		}
		w.wds[int32(wd)] = d
	}
	return w
}

// opensWith returns how many opens of path the watch saw up to and
// including those control makes. inotify queues an event before the
// system call that caused it returns, so once control has returned every
// open so far is in the queue: it is read to its end, without waiting.
func (w *openWatch) opensWith(t *testing.T, path string, control func()) int {
	t.Helper()
	control()
	n := 0
	for {
		m, err := unix.Read(w.fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return n
		}
		if err != nil {
			t.Fatalf("reading inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := bytes.TrimRight(w.buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("the inotify queue overflowed")
			}
			if ev.Mask&unix.IN_OPEN != 0 && filepath.Join(w.wds[ev.Wd], string(name)) == path {
				n++
			}
		}
	}
}

// TestSpecialFilesNotOpened asks every read of a file (read_file,
// read_many_files, grep_search, edit_file, the directory walks' start) to
// read a FIFO and a character device in the workspace: each is refused
// with a typed error, and an inotify watch on the workspace sees no open
// of either — opening a device can act by itself (a watchdog starts, a
// tape rewinds). A control open after the calls shows the watch sees an
// open of the same node.
func TestSpecialFilesNotOpened(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"plain.txt": "x\n", "sub/inner/a.txt": "x\n"})
	calls := []struct {
		op, args string
		// item: the error is an item of the result (read_many_files).
		item bool
	}{
		{op: "read_file", args: `{"path":"NODE"}`},
		{op: "read_many_files", args: `{"paths":["NODE"]}`, item: true},
		{op: "grep_search", args: `{"pattern":"x","path":"NODE"}`},
		{op: "edit_file", args: `{"path":"NODE","old_string":"a","new_string":"b"}`},
		{op: "replace_lines", args: `{"path":"NODE","start_line":1,"end_line":1,"new_text":"b"}`},
		{op: "list_dir", args: `{"path":"NODE"}`},
		{op: "glob", args: `{"pattern":"*","path":"NODE"}`},
	}
	for _, node := range []struct {
		name string
		make func(p string) error
	}{
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }},
		{"chardev", func(p string) error {
			if os.Geteuid() != 0 {
				t.Skip("making a character device needs root")
			}
			return unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))) // /dev/null's numbers
		}},
	} {
		t.Run(node.name, func(t *testing.T) {
			p := filepath.Join(dir, node.name)
			if err := node.make(p); err != nil {
				t.Fatal(err)
			}
			w := newOpenWatch(t, dir)
			for _, c := range calls {
				res, err := run(t, f, c.op, strings.NewReplacer("NODE", node.name).Replace(c.args))
				if n := w.opensWith(t, p, func() {}); n > 0 {
					t.Errorf("%s opened %s", c.op, node.name)
				}
				if c.item {
					if err != nil {
						t.Fatalf("%s: %v", c.op, err)
					}
					items, _ := res.Structured["files"].([]map[string]any)
					if len(items) != 1 || items[0]["error"] == nil {
						t.Errorf("%s: want an error for %s, got %v", c.op, node.name, res.Structured["files"])
					}
					continue
				}
				if err == nil {
					t.Errorf("%s of %s: no error: %q", c.op, node.name, res.Text)
					continue
				}
				if !errors.Is(err, errdefs.ErrFailed) {
					t.Errorf("%s of %s: error %v (%T), want %v", c.op, node.name, err, err, errdefs.ErrFailed)
				}
			}
			n := w.opensWith(t, p, func() {
				fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
				if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
					t.Skipf("the temp directory's file system does not open devices (nodev?): %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				unix.Close(fd)
			})
			if n != 1 {
				t.Fatalf("the watch saw %d opens of %s for the control's one", n, node.name)
			}
		})
	}
}

// TestSpecialGitignoreNotOpened makes the .gitignore of a directory above
// a walk's start a FIFO: grep_search and glob below it skip it without
// opening it (an open without O_NONBLOCK would wait for a writer forever).
func TestSpecialGitignoreNotOpened(t *testing.T) {
	f, dir := newTool(t, tools.Limits{}, map[string]string{"sub/inner/a.txt": "x\n"})
	sub := filepath.Join(dir, "sub")
	p := filepath.Join(sub, ".gitignore")
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	w := newOpenWatch(t, sub)
	for _, c := range []struct{ op, args string }{
		{"grep_search", `{"pattern":"x","path":"sub/inner"}`},
		{"glob", `{"pattern":"*","path":"sub/inner"}`},
		{"grep_search", `{"pattern":"x","path":"sub"}`},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := run(t, f, c.op, c.args)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			// Release the blocked open: a writer's open completes it.
			if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
			<-done
			t.Fatalf("%s %s blocked opening sub/.gitignore, a FIFO", c.op, c.args)
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.op, c.args, err)
		}
		if n := w.opensWith(t, p, func() {}); n > 0 {
			t.Errorf("%s %s opened sub/.gitignore, a FIFO", c.op, c.args)
		}
	}
	n := w.opensWith(t, p, func() {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	})
	if n != 1 {
		t.Fatalf("the watch saw %d opens of the FIFO for the control's one", n)
	}
}
