package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Default resource limits of one sandboxed command's process tree: enough
// for parallel builds (go test ./..., make -j), small enough that a fork
// bomb or a runaway allocation ends inside its own cgroup.
const (
	DefaultPids   = 1024
	DefaultMemory = 4 << 30
)

// Limits are the cgroup directories below which each sandboxed command
// gets a cgroup of its own with pids and memory limits. The daemon opens
// them once (OpenLimits); the helper of each command creates, enters and
// removes the command's cgroup below them.
//
// Where cgroup v2 delegates the pids and memory controllers to toold's
// cgroup, v2 is used; otherwise the cgroup v1 pids and memory hierarchies,
// when they are mounted and writable (root on a hybrid host). A controller
// found in neither is reported missing by Describe.
type Limits struct {
	// Pids and Memory are the limits of each command's tree.
	Pids   int
	Memory int64
	// dirs are toold's directories, one per hierarchy.
	dirs []string
	// missing says which controllers were not found, and why.
	missing []string
	// v2 is true when the unified hierarchy holds both controllers.
	v2 bool

	pool     chan *Slot
	poolOnce sync.Once
	filling  atomic.Bool
	closed   atomic.Bool
	seq      atomic.Int64
}

// OpenLimits creates toold's cgroup directories for the pids and memory
// controllers. It returns Limits that may lack a controller (Describe and
// Complete say so) and an error only when it found neither.
func OpenLimits(pids int, memory int64) (*Limits, error) {
	if pids <= 0 {
		pids = DefaultPids
	}
	if memory <= 0 {
		memory = DefaultMemory
	}
	l := &Limits{Pids: pids, Memory: memory}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("toold-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	if dir, err := ownCgroupDir(); err == nil && hasControllers(dir, "pids", "memory") {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err == nil {
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+pids +memory"), 0); err == nil {
				l.dirs, l.v2 = []string{d}, true
				removeStaleLimits(dir)
				return l, nil
			}
			_ = os.Remove(d)
		}
	}
	for _, ctrl := range []string{"pids", "memory"} {
		base, err := v1Dir(ctrl)
		if err != nil {
			l.missing = append(l.missing, fmt.Sprintf("%s: %v", ctrl, err))
			continue
		}
		removeStaleLimits(base)
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			l.missing = append(l.missing, fmt.Sprintf("%s: cgroup v1 %s is not writable: %v", ctrl, base, err))
			continue
		}
		l.dirs = append(l.dirs, d)
	}
	if len(l.dirs) == 0 {
		return nil, fmt.Errorf("no cgroup with the pids or memory controller is delegated to toold (%s)", strings.Join(l.missing, "; "))
	}
	return l, nil
}

// Dirs returns toold's cgroup directories, for Policy.Cgroups.
func (l *Limits) Dirs() []string {
	if l == nil {
		return nil
	}
	return slices.Clone(l.dirs)
}

// Complete reports whether both controllers are in force.
func (l *Limits) Complete() bool { return l != nil && len(l.missing) == 0 }

// Describe says in one line what the limits are and where they are
// enforced, or what is missing.
func (l *Limits) Describe() string {
	if l == nil {
		return "no per-command cgroup limits"
	}
	how := "cgroup v1"
	if l.v2 {
		how = "cgroup v2"
	}
	s := fmt.Sprintf("%s: at most %d processes and %d MiB of memory per command", how, l.Pids, l.Memory>>20)
	if len(l.missing) > 0 {
		s += "; missing " + strings.Join(l.missing, "; ")
	}
	return s
}

// Close kills whatever is left in toold's cgroups and removes them.
func (l *Limits) Close() error {
	if l == nil {
		return nil
	}
	l.closed.Store(true)
	l.poolOnce.Do(func() { l.pool = make(chan *Slot, slotPoolSize) })
	l.drain()
	for _, d := range l.dirs {
		removeLimitDir(d)
	}
	return nil
}

// hasControllers reports whether the children of the cgroup v2 directory
// dir get every one of ctrls.
func hasControllers(dir string, ctrls ...string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return false
	}
	have := strings.Fields(string(b))
	for _, c := range ctrls {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

// v1Dir returns the directory of the calling process's cgroup in the
// cgroup v1 hierarchy of controller ctrl.
func v1Dir(ctrl string) (string, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	own := ""
	for _, line := range strings.Split(string(cg), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), ctrl) {
			own = f[2]
		}
	}
	if own == "" {
		return "", errors.New("no cgroup v1 hierarchy has it, and cgroup v2 does not delegate it")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup ") {
			continue
		}
		pf := strings.Fields(post)
		if len(pf) < 3 || !slices.Contains(strings.Split(pf[2], ","), ctrl) {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		rel, err := filepath.Rel(root, own)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		return filepath.Join(mnt, rel), nil
	}
	return "", errors.New("its cgroup v1 hierarchy is not mounted")
}

// removeStaleLimits removes toold-PID-* directories below base whose
// daemon is gone.
func removeStaleLimits(base string) {
	for _, dir := range staleDaemonDirs(base) {
		removeLimitDir(dir)
	}
}

// removeLimitDir kills every process in dir and below and removes the
// directories, children first.
func removeLimitDir(dir string) {
	if holdsShim(dir) {
		// A shim's tree outlives toold (shim.go); the sweep after its end
		// removes the directory.
		return
	}
	killGroup(dir)
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		// A slot's placed thread may still be leaving (EBUSY).
		for i := 0; i < 100 && errors.Is(os.Remove(d), unix.EBUSY); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// killGroup kills every process in dir and below (cgroup.kill where the
// kernel has it, SIGKILL to each member otherwise) and waits up to 5 s for
// them to be gone.
func killGroup(dir string) {
	deadline := time.Now().Add(5 * time.Second)
	self := os.Getpid()
	for {
		// A slot's placed thread is toold's own (Slot): never signal toold.
		pids := slices.DeleteFunc(cgroupProcs(dir), func(p int) bool { return p == self })
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			signalAll(pids, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// limitGroup is one command's cgroups (one per hierarchy), made by the
// helper.
type limitGroup struct {
	dirs   []string
	failed error
}

// newLimitGroup creates a cgroup for the calling helper's command below
// each of parents, with the limits set.
func newLimitGroup(parents []string, pids int, memory int64) (*limitGroup, error) {
	return newLimitGroupNamed(parents, "c"+strconv.Itoa(os.Getpid()), pids, memory)
}

// newLimitGroupNamed creates the cgroup name below each of parents, with
// the limits set.
func newLimitGroupNamed(parents []string, name string, pids int, memory int64) (*limitGroup, error) {
	g := &limitGroup{}
	for _, p := range parents {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			g.remove()
			return nil, fmt.Errorf("sandbox: creating the command's cgroup: %w", err)
		}
		g.dirs = append(g.dirs, d)
		set := func(file, v string) bool {
			return os.WriteFile(filepath.Join(d, file), []byte(v), 0) == nil
		}
		if pids > 0 && exists(filepath.Join(d, "pids.max")) && !set("pids.max", strconv.Itoa(pids)) {
			g.remove()
			return nil, fmt.Errorf("sandbox: setting pids.max in %s", d)
		}
		if memory > 0 {
			m := strconv.FormatInt(memory, 10)
			switch {
			case exists(filepath.Join(d, "memory.max")):
				if !set("memory.max", m) {
					g.remove()
					return nil, fmt.Errorf("sandbox: setting memory.max in %s", d)
				}
				_ = set("memory.swap.max", "0")
			case exists(filepath.Join(d, "memory.limit_in_bytes")):
				if !set("memory.limit_in_bytes", m) {
					g.remove()
					return nil, fmt.Errorf("sandbox: setting memory.limit_in_bytes in %s", d)
				}
				_ = set("memory.memsw.limit_in_bytes", m)
			}
		}
	}
	return g, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// enter moves pid into the group's cgroups.
func (g *limitGroup) enter(pid int) error {
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			g.failed = fmt.Errorf("sandbox: entering the command's cgroup %s: %w", d, err)
			return g.failed
		}
	}
	return nil
}

func (g *limitGroup) err() error { return g.failed }

// remove kills what is left in the group and removes its cgroups.
func (g *limitGroup) remove() {
	for _, d := range g.dirs {
		removeLimitDir(d)
	}
	g.dirs = nil
}

// Slot is a cgroup (one per hierarchy) with the limits set, ready for one
// helper: the helper is born in it, so no migration — which costs an RCU
// grace period or two, tens of milliseconds on a busy machine — is on the
// command's path. On cgroup v2 the helper is cloned into it
// (CLONE_INTO_CGROUP); on v1, where that does not exist, it is forked from
// a thread of the daemon that was moved into the slot's cgroups ahead of
// time (v1 places threads, and a child starts in its forking thread's
// cgroups). Take one with Limits.Take, pass it as Stdio.Slot, Release it
// when the helper is done.
//
// On v1 the placed thread leaves the slot's cgroups as soon as the helper
// is forked, and only then is the slot's OOM killer turned on (until then
// it could pick toold, whose thread is a member): a command that passes
// its memory limit is killed, not held at the limit.
type Slot struct {
	dirs   []string
	memory int64         // the memory limit, for Exit.MemoryLimit
	fd     int           // v2: the cgroup directory, for CLONE_INTO_CGROUP
	run    chan func()   // v1: runs a function on the placed thread, once
	done   chan struct{} // v1: closed once that function returned and the thread left
	// oom are the files that count the OOM killer's kills in the slot:
	// memory.events (v2) or memory.oom_control (v1, also the switch leave
	// turns on) — found once, so that the end of each command reads only
	// these.
	oom []string
}

// slotPoolSize is how many warm slots Limits keeps.
const slotPoolSize = 4

// Take returns a warm slot, or makes one now when none is ready; nil when
// one cannot be made (the command then runs without limits, and the error
// is logged by the caller). It refills the pool in the background.
func (l *Limits) Take() (*Slot, error) {
	if l == nil {
		return nil, nil
	}
	l.poolOnce.Do(func() { l.pool = make(chan *Slot, slotPoolSize) })
	defer l.refill()
	select {
	case s := <-l.pool:
		return s, nil
	default:
		return l.newSlot()
	}
}

// refill tops the pool up in the background, one goroutine at a time.
func (l *Limits) refill() {
	if !l.filling.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.filling.Store(false)
		for len(l.pool) < cap(l.pool) && !l.closed.Load() {
			s, err := l.newSlot()
			if err != nil {
				return
			}
			select {
			case l.pool <- s:
			default:
				s.Release()
				return
			}
			if l.closed.Load() {
				// Close may have emptied the pool before this slot was
				// in it: empty it again (a Close that sets closed after
				// this check empties it itself).
				l.drain()
				return
			}
		}
	}()
}

// drain releases the slots in the pool.
func (l *Limits) drain() {
	for {
		select {
		case s := <-l.pool:
			s.Release()
		default:
			return
		}
	}
}

// newSlot makes a slot's cgroups and, on v1, places a thread in them.
func (l *Limits) newSlot() (*Slot, error) {
	name := fmt.Sprintf("s%d", l.seq.Add(1))
	var parents []string
	for _, d := range l.dirs {
		parents = append(parents, d)
	}
	g, err := newLimitGroupNamed(parents, name, l.Pids, l.Memory)
	if err != nil {
		return nil, err
	}
	s := &Slot{dirs: g.dirs, memory: l.Memory, fd: -1}
	if l.v2 {
		fd, err := unix.Open(g.dirs[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			g.remove()
			return nil, err
		}
		s.fd = fd
		if f := filepath.Join(g.dirs[0], "memory.events"); exists(f) {
			s.oom = []string{f}
		}
		return s, nil
	}
	// The placed thread is toold's: the memory cgroup's OOM killer, which
	// picks the largest process among its members, could kill toold. So
	// it is off until the thread has left (leave).
	for _, d := range s.dirs {
		if f := filepath.Join(d, "memory.oom_control"); exists(f) {
			if err := os.WriteFile(f, []byte("1"), 0); err != nil {
				g.remove()
				return nil, fmt.Errorf("sandbox: memory.oom_control in %s: %w", d, err)
			}
			s.oom = append(s.oom, f)
		}
	}
	s.run, s.done = make(chan func(), 1), make(chan struct{})
	placed := make(chan error, 1)
	go func() {
		// The thread is placed in the slot's cgroups and never used for
		// anything else: the goroutine ends locked, and the runtime ends
		// the thread. Nothing it forks depends on it living on (no
		// parent-death signal is tied to it).
		runtime.LockOSThread()
		tid := strconv.Itoa(unix.Gettid())
		for _, d := range s.dirs {
			if err := os.WriteFile(filepath.Join(d, "tasks"), []byte(tid), 0); err != nil {
				placed <- fmt.Errorf("sandbox: placing a thread in %s: %w", d, err)
				close(s.done)
				return
			}
		}
		placed <- nil
		f, ok := <-s.run
		if ok {
			f()
			// Before start returns, so before the helper gets its spec:
			// a command that reached the slot's memory limit while this
			// thread was still a member, the OOM killer off, was held
			// at the limit, and this thread, charging the slot for its
			// own kernel memory, blocked in the memory cgroup's OOM wait
			// and never left nor turned the killer on (a test process
			// hung for 11 minutes at load 39 in TestIsolatedMemory).
			s.leave(tid)
		}
		close(s.done)
	}()
	if err := <-placed; err != nil {
		g.remove()
		return nil, err
	}
	return s, nil
}

// leave moves the placed thread tid back to toold's own cgroups (the
// parents of toold's directories) and then turns the slot's OOM killer on.
// It runs on the placed thread, after the helper was forked and before
// Slot.start returns (the helper runs nothing before it gets its spec). Should the
// thread not leave, the OOM killer stays off: the command is then held at
// its limit rather than toold risked.
func (s *Slot) leave(tid string) {
	for _, d := range s.dirs {
		own := filepath.Dir(filepath.Dir(d))
		if err := os.WriteFile(filepath.Join(own, "tasks"), []byte(tid), 0); err != nil {
			return
		}
	}
	for _, f := range s.oom {
		_ = os.WriteFile(f, []byte("0"), 0)
	}
}

// oomKilled reports whether the kernel's OOM killer killed a process of
// the slot because it reached its memory limit.
func (s *Slot) oomKilled() bool {
	for _, f := range s.oom {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
				return true
			}
		}
	}
	return false
}

// start runs start (which forks the helper) so that the helper is born in
// the slot: on its placed thread (v1), or with cmd cloned into the cgroup
// (v2, set up by the caller through CgroupFD). ownThread says start changes
// its thread (joins a namespace): on v2 it then runs on a thread of its
// own (the v1 placed thread is discarded anyway).
func (s *Slot) start(start func() error, ownThread bool) error {
	if s.run == nil {
		if ownThread {
			return onOwnThread(start)
		}
		return start()
	}
	var err error
	s.run <- func() { err = start() }
	close(s.run)
	<-s.done
	return err
}

// Dirs returns the slot's cgroup directories.
func (s *Slot) Dirs() []string { return slices.Clone(s.dirs) }

// cgroupFD returns the v2 directory descriptor, or -1.
func (s *Slot) cgroupFD() int { return s.fd }

// Release kills what is left in the slot's cgroups and removes them (in
// the background: emptying them waits for the namespaces' teardown).
func (s *Slot) Release() {
	if s == nil {
		return
	}
	if s.run != nil {
		select {
		case <-s.done:
		default:
			close(s.run) // never used: let the thread end
		}
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	dirs := s.dirs
	go func() {
		for _, d := range dirs {
			// A slot has no cgroups below it (commands cannot make any:
			// the cgroup file system is read-only in the sandbox and its
			// capabilities are gone), so once its helper is reaped, which
			// is when Warm releases it, a plain rmdir succeeds: the kernel
			// refuses it (EBUSY) while a process is left. Only then is
			// the slot searched (a shim's, its members killed, its tree
			// walked): rmdir first took the release from 5.6% to 1.1%
			// of a warm command's CPU (BenchmarkWarmTrue, perf).
			if os.Remove(d) != nil {
				removeLimitDir(d)
			}
		}
	}()
}
