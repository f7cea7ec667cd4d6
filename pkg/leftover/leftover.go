// Package leftover lets toold find what a toold that died (SIGKILL, a
// crash, a power cut) left behind: temporary files of atomic writes in the
// workspace and directories of kept output in the temp dir.
//
// Everything toold creates for itself carries an owner mark in its name,
// "<pid>p<start>", the process id and the start time (clock ticks after
// boot, from /proc/PID/stat) of the toold that made it. A name whose mark
// names a process that no longer runs (no such pid, or a pid reused by a
// process that started at another time) is a leftover and may be removed;
// anything else, including names without a mark and marks of a toold that
// still runs, is left alone.
package leftover

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	markOnce sync.Once
	mark     string
)

// Mark returns the owner mark of this process: "<pid>p<start>".
func Mark() string {
	markOnce.Do(func() {
		pid := os.Getpid()
		start, _ := startTime(pid)
		mark = fmt.Sprintf("%dp%d", pid, start)
	})
	return mark
}

// ParseMark splits a mark made by Mark.
func ParseMark(m string) (pid int, start uint64, ok bool) {
	p, s, found := strings.Cut(m, "p")
	if !found {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != p {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(start, 10) != s {
		return 0, 0, false
	}
	return pid, start, true
}

// Dead reports whether the process a mark names is certainly gone: its
// pid does not run, runs a process that started at another time, or is
// the same process exited and not yet reaped (a zombie). When
// it cannot tell (no /proc, a malformed mark, an unreadable entry), Dead
// says false, so nothing is removed on a guess.
func Dead(m string) bool {
	pid, start, ok := ParseMark(m)
	if !ok {
		return false
	}
	if m == Mark() {
		return false
	}
	got, state, err := stat(pid)
	if err != nil {
		return os.IsNotExist(err)
	}
	if start != 0 && got != start {
		return true
	}
	// A killed toold its parent has not reaped yet (a zombie) is gone
	// all the same: it runs nothing and removes nothing.
	return start != 0 && (state == "Z" || state == "X")
}

// startTime returns field 22 of /proc/PID/stat: when the process started,
// in clock ticks after boot.
func startTime(pid int) (uint64, error) {
	start, _, err := stat(pid)
	return start, err
}

// stat returns fields 22 (the start time, in clock ticks after boot) and
// 3 (the state: R, S, D, Z...) of /proc/PID/stat.
func stat(pid int) (start uint64, state string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	// The command name (field 2) is in parentheses and may contain
	// anything; the fields after its last ')' start with field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", fmt.Errorf("leftover: /proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, "", fmt.Errorf("leftover: /proc/%d/stat: malformed", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return start, f[0], err
}

// MarkOf returns the owner mark of the running process pid.
func MarkOf(pid int) (string, error) {
	start, err := startTime(pid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%dp%d", pid, start), nil
}
