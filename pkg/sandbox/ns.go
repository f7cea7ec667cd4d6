package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The isolated helper (Policy.Isolate) runs in two stages.
//
// Stage one is the helper the daemon started, in the daemon's namespaces.
// On a thread of its own it creates a new network namespace with only the
// loopback interface up and, when the policy names toold's egress proxy,
// opens a listener on 127.0.0.1 at the proxy's port inside it; from that
// thread it starts stage two — the helper again — in new mount, pid, IPC
// and UTS namespaces (and that network namespace), places it in the
// command's cgroups, and hands it the spec. Stage one then forwards every
// connection to the inner listener to the proxy (it still lives in the
// daemon's network namespace, and nothing inside can reach it by path),
// relays stop requests, and reports what stage two reports.
//
// When the daemon gives the helper a shared network namespace (Stdio.Netns,
// as toold always does) and no cgroup parents to make the command's cgroup
// in (Policy.Cgroups: toold gives it a Slot instead), there is no stage
// one: the daemon forks the helper from a thread of its own that joined the
// shared network namespace (the slot's placed thread on cgroup v1), in new
// mount, pid, IPC and UTS namespaces — the helper is born stage two. That
// saves a Go program's start (an exec and a runtime start-up, milliseconds)
// per command; the daemon translates the command's pid itself, and does
// not wait for the init's reaping (its namespaces' teardown) to call the
// command done (Process.wait).
//
// Stage two is the init (pid 1) of the new pid namespace. It makes every
// mount private and read-only except the writable directories, masks the
// hidden paths (an empty read-only tmpfs over a directory, /dev/null over a
// file), mounts a fresh /proc (toold's processes do not exist there), drops
// every capability, applies Landlock, and then supervises the command as
// the plain helper does. When it exits the kernel kills whatever is left in
// its pid namespace.

// netnsFD is the descriptor of the shared network namespace in a helper
// started with Stdio.Netns.
const netnsFD = 5

// stageInit is Spec.Stage of the helper's second stage.
const stageInit = "init"

// cloneFlags are the namespaces of stage two besides the network one,
// which stage one creates on its own thread.
const cloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// superviseIsolated is stage one (see above).
func superviseIsolated(spec Spec, onStart func(pid int)) (Exit, error) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	defer signal.Stop(sigs)
	pol := *spec.Policy

	specR, specW, err := os.Pipe()
	if err != nil {
		return Exit{}, err
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return Exit{}, err
	}
	cg, err := newLimitGroup(pol.Cgroups, pol.Pids, pol.Memory)
	if err != nil {
		specR.Close()
		specW.Close()
		statR.Close()
		statW.Close()
		return Exit{}, err
	}
	// The cgroups are removed after the exit is reported: emptying them
	// waits for the namespaces' teardown, which the daemon need not.
	afterReport = append(afterReport, cg.remove)

	type forked struct {
		pid int
		ln  net.Listener
		err error
	}
	forkedc := make(chan forked, 1)
	initDone := make(chan struct{})
	// The thread that enters the new network namespace never leaves it:
	// the goroutine keeps it locked and ends with it (Go then ends the
	// thread). It stays alive until stage two has reported its end,
	// because the parent-death signal of stage two (should stage one be
	// killed outright) follows the thread that forked it, not the process.
	go func() {
		runtime.LockOSThread()
		var f forked
		if spec.SharedNetns {
			f.err = joinNetns(netnsFD)
			unix.Close(netnsFD)
		} else {
			f.ln, f.err = enterNetns(pol.Proxy)
		}
		if f.err == nil {
			exe := "/proc/self/exe"
			args := append([]string{HelperName}, os.Args[1:]...)
			f.pid, f.err = syscall.ForkExec(exe, args, &syscall.ProcAttr{
				Env:   []string{"GORACE=atexit_sleep_ms=0"},
				Files: []uintptr{0, 1, 2, specR.Fd(), statW.Fd()},
				Sys: &syscall.SysProcAttr{
					Cloneflags: cloneFlags,
					Pdeathsig:  syscall.SIGKILL,
				},
			})
			if f.err != nil {
				f.err = fmt.Errorf("starting the sandbox (mount, pid, IPC and UTS namespaces): %w", f.err)
			}
		}
		forkedc <- f
		<-initDone
	}()
	f := <-forkedc
	specR.Close()
	statW.Close()
	if f.err != nil {
		close(initDone)
		specW.Close()
		statR.Close()
		if f.ln != nil {
			f.ln.Close()
		}
		return Exit{}, f.err
	}
	initPid := f.pid
	// The init waits for its spec: it enters its cgroups before it runs
	// anything.
	if err := cg.enter(initPid); err != nil {
		_ = unix.Kill(initPid, unix.SIGKILL)
		specW.Close()
	} else {
		inner := spec
		inner.Stage = stageInit
		// Stage one watches the daemon's lifeline and stops the init.
		inner.Lifeline = false
		_ = json.NewEncoder(specW).Encode(inner)
		specW.Close()
	}

	var fwd sync.WaitGroup
	if f.ln != nil {
		fwd.Add(1)
		go func() { defer fwd.Done(); forward(f.ln, pol.Proxy) }()
	}

	// Stage two's reports, translated: its command's pid is the one in
	// the daemon's pid namespace.
	reports := make(chan message, 4)
	go func() {
		defer close(reports)
		br := bufio.NewReader(statR)
		for {
			line, err := br.ReadBytes('\n')
			var m message
			if len(line) > 0 && json.Unmarshal(line, &m) == nil {
				reports <- m
			}
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan unix.WaitStatus, 1)
	go func() {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(initPid, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			break
		}
		waited <- ws
	}()

	var (
		exit     *Exit
		startErr string
		started  bool
		stopSig  syscall.Signal
		initWS   unix.WaitStatus
		initGone bool
		gone     = daemonGone
	)
	finish := func() (Exit, error) {
		close(initDone)
		if f.ln != nil {
			f.ln.Close()
			fwd.Wait()
		}
		statR.Close()
		if cgErr := cg.err(); cgErr != nil && !started {
			return Exit{}, cgErr
		}
		switch {
		case startErr != "":
			return Exit{}, errors.New(startErr)
		case exit != nil:
			return *exit, nil
		case !started:
			return Exit{}, fmt.Errorf("the sandbox's init ended before the command started (%s)", describeWait(initWS))
		}
		return Exit{Code: -1, Stopped: stopSig != 0}, nil
	}
	for {
		select {
		case m, ok := <-reports:
			if !ok {
				// The init closed its end as it exited: what it reported is
				// all there is; the kernel tears its namespaces down and the
				// daemon's reaper (or init) reaps it, off the command's path.
				reports = nil
				if initGone || exit != nil || startErr != "" {
					return finish()
				}
				continue
			}
			switch {
			case m.Started != nil:
				started = true
				onStart(hostChild(initPid, m.Started.PID))
				if stopSig != 0 {
					// Sent before the init could catch it: again.
					_ = unix.Kill(initPid, stopSig)
				}
			case m.Error != "":
				startErr = m.Error
			case m.Exit != nil:
				e := *m.Exit
				exit = &e
			}
		case ws := <-waited:
			initWS, initGone = ws, true
			if reports == nil {
				return finish()
			}
			// The reports end once the pipe's writer is gone: the init
			// holds it close-on-exec, so that is at once.
		case s := <-sigs:
			if s == unix.SIGTERM || s == unix.SIGHUP {
				if stopSig == 0 {
					stopSig = s.(syscall.Signal)
				}
				_ = unix.Kill(initPid, s.(syscall.Signal))
			}
		case <-gone:
			// The daemon is gone: stop the tree as it would have.
			gone = nil
			if stopSig == 0 {
				stopSig = syscall.SIGTERM
			}
			_ = unix.Kill(initPid, syscall.SIGTERM)
		}
	}
}

// afterReport are run by HelperMain once the exit is reported.
var afterReport []func()

// describeWait says how a process ended.
func describeWait(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by signal " + signalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// hostChild returns the pid, in the daemon's pid namespace, of the child of
// initPid whose pid in the sandbox is inner; initPid when it is gone.
func hostChild(initPid, inner int) int {
	// The thread that forked it is usually the init's first; any of them
	// may have.
	if pid := childOf(initPid, strconv.Itoa(initPid), inner); pid != 0 {
		return pid
	}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", initPid))
	for _, e := range ents {
		if pid := childOf(initPid, e.Name(), inner); pid != 0 {
			return pid
		}
	}
	return initPid
}

// childOf returns the host pid of the child of thread tid of process pid
// whose pid in its namespace is inner, or 0.
func childOf(pid int, tid string, inner int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, tid))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		c, err := strconv.Atoi(f)
		if err == nil && nsPid(c) == inner {
			return c
		}
	}
	return 0
}

// nsPid returns the innermost pid of a process (the last NSpid field of
// its status), or 0.
func nsPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// enterNetns moves the calling thread (locked, never to be unlocked) into
// a new network namespace, brings its loopback interface up, and, when
// proxy is set ("127.0.0.1:PORT"), listens on 127.0.0.1:PORT there.
func enterNetns(proxy string) (net.Listener, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("creating the sandbox's network namespace: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("bringing up the sandbox's loopback interface: %w", err)
	}
	if proxy == "" {
		return nil, nil
	}
	_, port, err := net.SplitHostPort(proxy)
	if err != nil {
		return nil, fmt.Errorf("egress proxy address %q: %w", proxy, err)
	}
	pn, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("egress proxy address %q: %w", proxy, err)
	}
	// The socket is made with raw system calls on this thread: the
	// runtime's net package may create it on another one.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: pn, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the sandbox's proxy listener: %w", err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the sandbox's proxy listener: %w", err)
	}
	file := os.NewFile(uintptr(fd), "proxy-listener")
	defer file.Close()
	return net.FileListener(file)
}

// loopbackUp sets the IFF_UP flag of lo in the calling thread's network
// namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// forward accepts connections on ln (inside the sandbox's network
// namespace) and joins each to a new connection to proxy (in the daemon's)
// until ln is closed; it returns once every connection is done.
func forward(ln net.Listener, proxy string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			up, err := net.DialTimeout("tcp", proxy, 10*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				if tc, ok := up.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, up)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		}()
	}
}

// initMain is stage two: it builds the sandbox's file system view in its
// mount namespace, drops its capabilities and supervises the command.
func initMain(spec Spec, onStart func(pid int)) (Exit, error) {
	// Capabilities are a thread's: they are dropped on this thread, which
	// then forks the command (supervise runs on this goroutine).
	runtime.LockOSThread()
	pol := *spec.Policy
	if err := buildView(pol, map[string]bool{}); err != nil {
		return Exit{}, err
	}
	_ = unix.Sethostname([]byte("toold-sandbox"))
	if err := dropCapabilities(&pol); err != nil {
		return Exit{}, err
	}
	spec.Policy.Isolate, spec.Policy.OwnNetns = false, true
	return supervise(spec, onStart)
}

// procMasked and procReadOnly are the parts of /proc a command does not
// need and that reveal or change the host (as container runtimes do).
var (
	procMasked   = []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats", "/proc/acpi", "/proc/scsi", "/sys/firmware"}
	procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}
)

// buildView makes the mount namespace's view: every mount private and
// read-only, the writable directories writable but their read-only paths,
// the hidden paths masked, a fresh /proc and an empty /dev/shm. The directories it pins (pinAncestors)
// are added to pinned.
func buildView(pol Policy, pinned map[string]bool) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: making mounts private: %w", err)
	}
	if err := setRecursive("/", unix.MOUNT_ATTR_RDONLY, 0); err != nil {
		return fmt.Errorf("sandbox: making the file system read-only: %w", err)
	}
	for _, w := range pol.Writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("sandbox: writable directory %s: %w", w, err)
		}
		if err := setRecursive(w, 0, unix.MOUNT_ATTR_RDONLY); err != nil {
			return fmt.Errorf("sandbox: writable directory %s: %w", w, err)
		}
	}
	if err := readOnly(pol.ReadOnly); err != nil {
		return err
	}
	// A fresh /proc of the new pid namespace, over the daemon's.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("sandbox: mounting /proc: %w", err)
	}
	for _, p := range procReadOnly {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			_ = setRecursive(p, unix.MOUNT_ATTR_RDONLY, 0)
		}
	}
	for _, p := range procMasked {
		_ = mask(p)
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("sandbox: /dev/shm: %w", err)
		}
	}
	pinAncestors(slices.Concat(pol.Hide, pol.ReadOnly), pol.Writable, pinned)
	for _, h := range pol.Hide {
		// Gone, or no longer where it was (a socket's directory replaced
		// by a file): nothing to hide there.
		if err := mask(h); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("sandbox: hiding %s: %w", h, err)
		}
	}
	return nil
}

// pinAncestors bind-mounts onto itself every directory between a writable
// directory and a hidden or read-only path below it (the directories
// holding a workspace's .env, or a nested repository's .git), once (pinned
// lists those done). A mount point cannot be renamed or removed in the
// namespace that has it (EBUSY), and every sandbox's view has these: no
// command can move a secret's directory, or a repository to put its own
// in its place. A mask follows its file when a directory above it is
// renamed, but the views built later are made from a walk of the
// workspace made a moment before: a command that renamed the directory
// back and forth without pause had the secret out of place, unmasked, in
// the views built in between (`mv cfg alt; mv alt cfg` in a loop, `cat
// cfg/.env alt/.env` in the next commands). Failures are ignored: the path
// may be gone.
func pinAncestors(hide, writable []string, pinned map[string]bool) {
	for _, h := range hide {
		for _, w := range writable {
			rel, err := filepath.Rel(w, h)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			dir := w
			parts := strings.Split(rel, "/")
			for _, part := range parts[:len(parts)-1] {
				dir = filepath.Join(dir, part)
				if pinned[dir] {
					continue
				}
				pinned[dir] = true
				_ = unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, "")
			}
		}
	}
}

// readOnly binds each directory or regular file of paths onto itself
// read-only, with the mounts below it (Policy.ReadOnly). A symbolic link
// is not followed, and a path gone or neither a directory nor a regular
// file is skipped; any other failure is the view's: the command does not
// run with the path writable.
func readOnly(paths []string) error {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				continue
			}
			return fmt.Errorf("sandbox: read-only directory %s: %w", p, err)
		}
		if err := setRecursive(p, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
			return fmt.Errorf("sandbox: read-only directory %s: %w", p, err)
		}
	}
	return nil
}

// setRecursive sets and clears mount attributes on the mount at path and
// every mount below it (mount_setattr, Linux 5.12).
func setRecursive(path string, set, clr uint64) error {
	return unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: set, Attr_clr: clr})
}

// mask hides path: an empty read-only tmpfs over a directory, /dev/null
// over anything else. Symbolic links are not followed: a link is masked
// where it points only when that target is listed itself.
func mask(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return nil
	case fi.IsDir():
		return unix.Mount("tmpfs", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555")
	default:
		if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
	}
}

// dropCapabilities empties the calling process's capability bounding set,
// its ambient, effective, permitted and inheritable sets, so that neither
// it nor any program it runs (a setuid one, or root's) has a capability:
// the command cannot mount, unmount the masks, load modules or create
// device nodes, even as uid 0. pol is the command's policy, for its
// seccomp filter's unix-socket supervisor (installSeccomp).
func dropCapabilities(pol *Policy) error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			return fmt.Errorf("sandbox: dropping capability %d: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: dropping capabilities: %w", err)
	}
	// Programs exec'd as uid 0 would otherwise get the (empty) bounding
	// set back as permitted; no_new_privs also keeps setuid programs from
	// gaining anything.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	// Nothing in the sandbox may trace the helper, read its memory or
	// take its descriptors (the notify fd): a warm helper's forking
	// thread is in the command's Landlock domain without capabilities,
	// and a command attached to it with ptrace while the helper was
	// dumpable (TestUnixNotifyLateSockets) — in a process whose first
	// thread may still mount. The command is dumpable again after its
	// exec.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: making the helper non-dumpable: %w", err)
	}
	// And the kernel interfaces the command is refused (seccomp.go), on
	// this thread, which forks the command.
	notify := !pol.NoUnixSupervisor && UnixSupervisorSupported() == nil
	fd, err := installSeccomp(pol, notify)
	if err != nil {
		return err
	}
	if fd >= 0 {
		// The helper is the init of the command's pid namespace: its
		// /proc is the command's tree.
		go serveUnixNotify(fd, &supervisor{pol: *pol})
	}
	return nil
}

// cleanPaths returns ps cleaned, absolute, without duplicates.
func cleanPaths(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
