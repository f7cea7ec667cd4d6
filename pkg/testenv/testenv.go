// Package testenv gates tests on what the machine has (cgroups, Landlock, a
// pseudo-terminal, git, the MCP peers). A test that lacks one skips, saying
// what is missing; with TOOLD_REQUIRE_PEERS set (make test sets it, as CI
// runs it) it fails instead, so a capability the CI machine has cannot go
// missing unnoticed behind a skip.
package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireEnv is the variable that turns skips into failures.
const RequireEnv = "TOOLD_REQUIRE_PEERS"

// Required reports whether missing capabilities fail tests.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Need skips t (or fails it, when Required) unless err is nil. what names
// the capability and how to get it ("Landlock ABI >= 6", "git: make
// net-deps").
func Need(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("%s: %v", what, err)
	if Required() {
		t.Fatalf("%s (%s is set: this machine is expected to have it)", msg, RequireEnv)
	}
	t.Skip(msg + "; skipping")
}

// Buffer is a bytes.Buffer safe for one writer and concurrent readers: the
// output of a child process or a terminal that a test polls.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Until polls cond until it holds (true) or within passes (false): the one
// way tests wait for a condition they cannot be told of, never a fixed
// sleep. It looks often at first and then every 20 ms.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}

// Poll is Until that fails t, saying what it waited for, when cond does
// not hold within the time given.
func Poll(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// SmallFS mounts a tmpfs of size bytes (rounded up to pages by the kernel)
// on a new temp directory and returns it; it is unmounted when t ends. It
// needs root (CAP_SYS_ADMIN); without it the test is skipped (or fails,
// when Required). Tests use it to run out of disk space for real.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toold-smallfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	err = syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
	Need(t, err, "a small tmpfs to fill (mount needs root)")
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file named name in dir until the file system is full (a
// write fails with ENOSPC) and returns its path; removing it frees the
// space again.
func Fill(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// The last page of another file may still have room: fill byte by byte.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	return p
}
