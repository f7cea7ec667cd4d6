package terminal

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A refused size falls back to the largest the kernel allows: the limit
// in pipe-max-size when it can be read, else halving; a pipe whose every
// size is refused stays as it is. The setter is the real fcntl on a real
// pipe, refusing above limit as the kernel does for a process without
// CAP_SYS_RESOURCE when fs.pipe-max-size is lowered (that sysctl is not
// per namespace: a test cannot lower it without lowering the host's).
func TestGrowPipeFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int // the kernel refuses above it
		max   int // what pipe-max-size reads; 0: unreadable
		want  int // the pipe's size after
	}{
		{"allowed", 1 << 20, 1 << 20, pipeSize},
		{"lowered", 256 << 10, 256 << 10, 256 << 10},
		{"limit unreadable", 300 << 10, 0, 256 << 10},
		{"all refused", 0, 128 << 10, minPipeSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			fd := int(w.Fd())
			var asked []int
			set := func(n int) error {
				asked = append(asked, n)
				if n > tc.limit {
					return unix.EPERM
				}
				_, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, n)
				return err
			}
			granted := growTo(set, pipeSize, func() int { return tc.max })
			got, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("pipe size %d after asking %v, want %d", got, asked, tc.want)
			}
			if tc.want == minPipeSize && granted != 0 {
				t.Fatalf("growTo reported %d granted, but every size was refused", granted)
			}
		})
	}
}

// growPipe on a real pipe gets at least what the host's pipe-max-size
// allows, up to pipeSize.
func TestGrowPipeRealPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w)
	got, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := min(pipeSize, pipeMaxSize())
	if pipeMaxSize() == 0 {
		want = minPipeSize
	}
	if got < want {
		t.Fatalf("pipe size %d, want at least %d (pipe-max-size %d)", got, want, pipeMaxSize())
	}
}
