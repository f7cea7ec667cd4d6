package procgroup

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// Wait is cmd.Wait that holds no OS thread while the process runs.
//
// os.Process.Wait blocks its goroutine in the wait system call, and a
// goroutine in a system call holds an OS thread: a burst of 1,000
// concurrent commands left toold with 1,000 threads for the rest of its
// life (the runtime keeps idle threads). Wait first waits for the process
// to exit through the runtime's network poller — a pidfd (pidfd_open(2))
// becomes readable when its process exits — and only then lets cmd.Wait
// reap it, which no longer blocks. Where pidfds are unavailable (Linux
// before 5.3, a seccomp filter) it is cmd.Wait.
func Wait(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		Exited(cmd.Process)
	}
	return cmd.Wait()
}

// Exited blocks until p has exited (it is a zombie, or already reaped),
// parked in the network poller rather than in a system call; it does not
// reap p. It returns early, without waiting, when the kernel offers no
// pollable pidfd, so callers follow it with p.Wait or cmd.Wait.
func Exited(p *os.Process) {
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return // reaped already, or no pidfds: Wait blocks as before
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Read calls the function again each time the poller reports the
	// pidfd readable, until it returns true; a pidfd polls readable once
	// its process has exited.
	_ = rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			return false
		}
		return err != nil || n > 0
	})
}
