package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/toold/toold/pkg/errdefs"
)

// StateLockFile is the file in the state directory that toold holds an
// exclusive flock(2) on while it runs, and that names the holder (pid,
// workspace, socket) for the message a second toold gets.
const StateLockFile = "toold.lock"

// ErrStateDirInUse is the class of the error Run returns when another toold
// holds the state directory (errors.Is with errdefs.ErrUnavailable too).
var ErrStateDirInUse = errors.New("state directory in use")

// lockStateDir takes the state directory for this process: one toold at a
// time appends to its audit chain and writes its history (two processes
// with their own counters would interleave one chain, and `toolctl audit
// verify` would report the log tampered with). The lock is flock(2) on
// StateLockFile, so the kernel releases it when the process ends, however it
// ends (a SIGKILLed toold leaves no stale lock); the file is opened
// close-on-exec, so commands toold runs do not inherit it.
//
// A directory that is held by another process is an error naming the
// holder and --state-dir. A directory that cannot be created or locked for
// any other reason (read-only, not a directory) is reported with held
// false: like the memory database and the audit log on by default, an
// unusable state directory does not stop toold (Run logs it; the audit log
// and history then fail to open there too).
func (m *Main) lockStateDir(dir string) (held bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(filepath.Join(dir, StateLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	// A toold that died a moment ago may still hold it through a child it
	// was forking: a forked process has its parent's descriptors until its
	// exec closes them (close-on-exec), and the lock lives as long as any
	// of them. Such a lock names a process that is gone: wait for the
	// exec (bounded) rather than refuse a restart.
	for deadline := time.Now().Add(staleLockWait); errors.Is(err, syscall.EWOULDBLOCK) && holderGone(f.Name()) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return true, m.stateDirInUse(dir, strings.TrimSpace(string(holder)))
		}
		return false, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	// Say who holds it, for the next one's message (best effort: the lock
	// is the flock, not this text).
	info := fmt.Sprintf("pid %d, workspace %s", os.Getpid(), m.ws.Dir())
	if s := m.Config.Socket; s != "" && s != "-" {
		if abs, err := filepath.Abs(s); err == nil {
			info += ", socket " + abs
		}
	}
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(info+"\n"), 0)
	}
	m.stateLock = f
	return true, nil
}

// staleLockWait bounds how long a lock whose named holder is gone is
// waited for (see lockStateDir).
const staleLockWait = 5 * time.Second

// holderGone reports whether the lock file names a pid ("pid N, ...")
// that no longer exists.
func holderGone(name string) bool {
	b, err := os.ReadFile(name)
	if err != nil {
		return false
	}
	var pid int
	if _, err := fmt.Sscanf(string(b), "pid %d,", &pid); err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// stateDirInUse is the error for a state directory another toold holds.
func (m *Main) stateDirInUse(dir, holder string) error {
	if holder == "" {
		holder = "another process"
	} else {
		holder = "another toold (" + holder + ")"
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, ErrStateDirInUse,
		"state directory %s is in use by %s: one toold per state directory (its audit log and history are one chain); "+
			"give this one its own with --state-dir DIR (or state_dir: in the config, TOOLD_STATE_DIR)", dir, holder)
}

// unlockStateDir releases the state directory (closing the file drops the
// flock). The file stays: removing it would race with a toold taking it.
func (m *Main) unlockStateDir() error {
	f := m.stateLock
	m.stateLock = nil
	if f == nil {
		return nil
	}
	return f.Close()
}
