package sandbox

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkUnixNotifyDecision measures the supervisor's decision on a
// path without the notification's round trip: the path opened as the
// caller would, and the bound sockets of the namespace listed (sock_diag).
// The calling thread's namespace is the host's here: more sockets than a
// sandbox's.
func BenchmarkUnixNotifyDecision(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			fd, errno := openAsCaller(path, unix.Gettid())
			if errno != 0 {
				b.Fatal(errno)
			}
			unix.Close(fd)
		}
	})
	b.Run("sock_diag", func(b *testing.B) {
		for b.Loop() {
			if _, err := unixDiag(udiagShowVFS); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestUnixNotifyFailsClosed: when the supervisor's notify fd closes, a
// connect waiting for it and every later one fail with ENOSYS — never go
// through. (The fd is the helper's, which lives as long as the command's
// tree; this checks the kernel's side of that promise.)
func TestUnixNotifyFailsClosed(t *testing.T) {
	if err := UnixSupervisorSupported(); err != nil {
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct{ pending, later error }
	listener := make(chan int, 1)
	done := make(chan result, 1)
	go func() {
		// The filter stays with this thread, which ends with the
		// goroutine (never unlocked).
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			listener <- -1
			return
		}
		prog := seccompProgram(seccompArch(), true, true)
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&fprog)))
		if errno != 0 {
			listener <- -1
			return
		}
		listener <- int(fd)
		connect := func() error {
			s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(s)
			return unix.Connect(s, &unix.SockaddrUnix{Name: path})
		}
		var r result
		r.pending = connect() // waits: nobody receives
		r.later = connect()
		done <- r
	}()
	fd := <-listener
	if fd < 0 {
		t.Fatal("installing the filter failed")
	}
	// The connect is pending once the notify fd is readable.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 60_000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("no pending connect: %v", err)
		}
		break
	}
	unix.Close(fd)
	r := <-done
	if r.pending != unix.ENOSYS || r.later != unix.ENOSYS {
		t.Fatalf("with the notify fd closed: pending connect %v, later connect %v; want ENOSYS both", r.pending, r.later)
	}
}

// TestServerEndHeld: the supervisor's lookup of a loopback connection's
// server end (sock_diag, by the connection's addresses) tells a server end
// not accepted yet (allowed: it waits in a listener's queue) from one
// another process holds (refused) and one the command's tree holds
// (allowed), on IPv4 and IPv6.
func TestServerEndHeld(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Skip(err)
			}
			defer ln.Close()
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			raw, err := c.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			check := func(s *supervisor, caller string) (errno unix.Errno) {
				if err := raw.Control(func(fd uintptr) { errno = s.serverEndHeld(int(fd), caller) }); err != nil {
					t.Fatal(err)
				}
				return errno
			}
			// A command's tree this test process is not in: a sleep's,
			// which holds nothing.
			sleep := exec.Command("sleep", "600")
			if err := sleep.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
			other, otherPid := &supervisor{tree: sleep.Process.Pid}, strconv.Itoa(sleep.Process.Pid)
			if errno := check(other, otherPid); errno != 0 {
				t.Fatalf("a server end not accepted yet: %v, want allowed", errno)
			}
			conn, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if errno := check(other, otherPid); errno != unix.EACCES {
				t.Fatalf("a server end another process accepted: %v, want EACCES", errno)
			}
			self := strconv.Itoa(os.Getpid())
			if errno := check(other, self); errno != 0 {
				t.Fatalf("a server end the caller's process accepted: %v, want allowed", errno)
			}
		})
	}
}
