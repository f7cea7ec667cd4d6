package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Orphans of a command whose helper died. A helper is a child subreaper:
// what a command starts stays below it. With the sandbox, the helper is
// the init of the command's pid namespace, which nothing inside can kill;
// without it (the sandbox off, or a call a person ran outside it) the
// command runs with toold's user and can kill its helper — and its
// orphans were then re-parented to init, out of toold's process tree,
// where the control plane's rule (pkg/peercred: a process below toold
// through a process toold started) no longer saw them as commands.
//
// AdoptOrphans makes toold itself a child subreaper, so that such orphans
// are re-parented to toold: pkg/peercred then judges every direct child
// of toold a possible command's orphan (OrphansReparented), and refuses
// it. toold must also reap them, without taking the exit status of a
// child that os/exec waits for: a zombie child of toold is reaped here
// only when toold holds no pidfd of it. Go starts every child through
// os/exec with clone(CLONE_PIDFD) and keeps that pidfd until its Wait has
// reaped it, so an os/exec child always has one; a re-parented orphan
// never does. AdoptOrphans checks that pidfds work first (as Go does
// before it uses them), and leaves toold as it was when they do not.

// orphansReaped is set once AdoptOrphans made toold a subreaper that reaps
// its orphans: OpenCgroups may then run commands as toold's children.
var orphansReaped atomic.Bool

// AdoptOrphans makes the calling process (toold's main, early) a child
// subreaper and reaps the orphans re-parented to it from then on, in a
// goroutine that lives as long as the process. Its error says why it did
// not (toold then works as before: a command that kills its helper with
// the sandbox off leaves its tree). Call it once.
func AdoptOrphans() error {
	if err := pidfdsWork(); err != nil {
		return fmt.Errorf("pidfds do not work here (%v): toold cannot tell its own children from adopted orphans", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		signal.Stop(sigs)
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	orphansReaped.Store(true)
	self := os.Getpid()
	go func() {
		for range sigs {
			// Coalesce: finding zombies reads every process's stat
			// (this kernel may have no /proc/PID/task/TID/children), and
			// every command's end sends SIGCHLD. Scanning at once put
			// 1.5–2.8 ms on each run_command; an orphan waits at most
			// reapDelay instead. Signals that arrive meanwhile are one
			// (sigs holds one), and the scan after them sees theirs.
			time.Sleep(reapDelay)
			ReapOrphans(self)
		}
	}()
	return nil
}

// reapDelay is how long an adopted orphan may stay a zombie: the reaper
// scans at most this often.
const reapDelay = 250 * time.Millisecond

// ReapOrphans reaps the zombie children of self (the calling process)
// that it holds no pidfd of — orphans re-parented to it — and returns
// their pids.
func ReapOrphans(self int) []int {
	if self == os.Getpid() && !zombieChildPending() {
		// No child of toold is a zombie: the one whose end sent SIGCHLD
		// was reaped by its own Wait meanwhile (a command's helper, always
		// but for an orphan). Finding zombies reads every process's stat
		// on this kernel, which cost toold 41% of its CPU in the
		// run_command bench row on a machine of many processes.
		return nil
	}
	zombies := ZombieChildren(self)
	if len(zombies) == 0 {
		return nil
	}
	held := pidfdPids()
	var out []int
	for _, pid := range zombies {
		if held == nil || held[pid] {
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
			out = append(out, pid)
		}
	}
	return out
}

// zombieChildPending says whether a child of the calling process is a
// zombie, without reaping it (waitid WNOWAIT; true when it cannot tell).
func zombieChildPending() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
	if errors.Is(err, unix.ECHILD) {
		return false // no children at all
	}
	// With WNOHANG and no child to wait for, Linux writes a zeroed
	// siginfo: si_signo is SIGCHLD only when it found one.
	return err != nil || info.Signo != 0
}

// pidfdPids returns the processes the calling process holds a pidfd of
// (/proc/self/fdinfo's "Pid:" lines), or nil when it cannot tell.
func pidfdPids() map[int]bool {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil
	}
	out := map[int]bool{}
	for _, n := range names {
		if l, err := os.Readlink("/proc/self/fd/" + n); err != nil || l != "anon_inode:[pidfd]" {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + n)
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
				if pid, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
					out[pid] = true
				}
			}
		}
	}
	return out
}

// pidfdsWork checks what os/exec needs to start children with a pidfd:
// pidfd_open, and waitid(P_PIDFD) (the checks Go makes before it uses
// them).
func pidfdsWork() error {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(fd)
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
		return fmt.Errorf("waitid(P_PIDFD): %v", err)
	}
	return nil
}
