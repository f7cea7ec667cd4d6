package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sandbox's seccomp filter: kernel interfaces a command does not need
// for development and that reach past the sandbox's namespaces, or widen
// the kernel's attack surface for a process with no capabilities. The
// sandbox's command runs as the host's uid (0 when toold is root) in the
// host's user namespace, so:
//
//   - keyctl, add_key, request_key are refused: the user keyring is
//     the uid's, shared with every process of that uid outside the
//     sandbox (the battery read a key the host had stored there, and
//     added one);
//   - a new user namespace is refused (unshare or clone with
//     CLONE_NEWUSER; clone3, whose flags a filter cannot read, fails
//     with ENOSYS so that libc falls back to clone): inside one a command
//     would hold every capability again over the namespaces it makes;
//   - io_uring, userfaultfd, bpf and perf_event_open are refused: a
//     large kernel surface, the usual tools of a kernel exploit;
//   - a system call of another architecture (32-bit x86 or x32 on
//     x86-64) is refused (ENOSYS): its numbers differ, and a filter by
//     number would not hold for it. 32-bit programs do not run in the
//     sandbox.
//
// ptrace and process_vm_readv stay: debuggers and strace work on the
// command's own processes; the pid namespace hides every other process,
// and Landlock keeps the command from tracing outside its domain.
//
// With notify (an isolated command, where the kernel has what the
// supervisor needs: unixnotify.go), connect goes to toold's unix-socket
// supervisor (SECCOMP_RET_USER_NOTIF), and unix datagram sockets are not
// made (socket and socketpair of AF_UNIX with a type other than
// SOCK_STREAM and SOCK_SEQPACKET: EPERM), because a datagram socket
// addresses a socket by path at every send.
//
// Each refused call fails with EPERM (ENOSYS where said), which programs
// handle as the feature being unavailable. The filter is installed on the
// thread that forks the command (after no_new_privs), so that the command
// and everything it starts inherit it; it cannot be removed.

// cloneNewUser is CLONE_NEWUSER.
const cloneNewUser = 0x10000000

// seccompArch is the audit architecture of the native system calls, 0
// when the filter does not know this architecture.
func seccompArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// seccompRefused are the system calls refused with EPERM.
var seccompRefused = []uint32{
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_USERFAULTFD, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
}

// seccompProgram returns the filter for arch; notify adds the unix-socket
// supervisor's entries.
func seccompProgram(arch uint32, notify bool) []unix.SockFilter {
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		and  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		// seccomp_data: nr at 0, arch at 4, args from 16 (the low 32
		// bits of args[0] at 16 on little-endian machines).
		offNr, offArch, offArg0, offArg1 = 0, 4, 16, 24
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
	}
	// The returns at the end, addressed from each test.
	tail := []unix.SockFilter{
		stmt(ret, allow),  // 0
		stmt(ret, eperm),  // 1
		stmt(ret, enosys), // 2
		// 3: clone and unshare: refused when args[0] has CLONE_NEWUSER.
		stmt(ldW, offArg0),
		jump(jset, cloneNewUser, 0, 1),
		stmt(ret, eperm),
		stmt(ret, allow),
		// 7: socket and socketpair: AF_UNIX only as a stream or seqpacket.
		stmt(ldW, offArg0),
		jump(jeq, unix.AF_UNIX, 0, 5),
		stmt(ldW, offArg1),
		stmt(and, 0xf), // the type without SOCK_NONBLOCK, SOCK_CLOEXEC
		jump(jeq, unix.SOCK_STREAM, 2, 0),
		jump(jeq, unix.SOCK_SEQPACKET, 1, 0),
		stmt(ret, eperm),
		stmt(ret, allow),
		// 15: to the supervisor.
		stmt(ret, unix.SECCOMP_RET_USER_NOTIF),
	}
	var body []unix.SockFilter
	// to returns the jump offset from instruction i of body (whose length
	// is n when done) to tail[t].
	type fix struct {
		at, target int
		onTrue     bool
	}
	var fixes []fix
	add := func(f unix.SockFilter, target int, onTrue bool) {
		fixes = append(fixes, fix{len(body), target, onTrue})
		body = append(body, f)
	}
	body = append(body, stmt(ldW, offArch))
	add(jump(jeq, arch, 0, 0), 2, false) // another architecture: ENOSYS
	body = append(body, stmt(ldW, offNr))
	if arch == unix.AUDIT_ARCH_X86_64 {
		add(jump(jge, 0x40000000, 0, 0), 2, true) // x32: ENOSYS
	}
	for _, nr := range seccompRefused {
		add(jump(jeq, nr, 0, 0), 1, true)
	}
	add(jump(jeq, unix.SYS_CLONE3, 0, 0), 2, true)
	add(jump(jeq, unix.SYS_CLONE, 0, 0), 3, true)
	add(jump(jeq, unix.SYS_UNSHARE, 0, 0), 3, true)
	if notify {
		add(jump(jeq, unix.SYS_CONNECT, 0, 0), 15, true)
		add(jump(jeq, unix.SYS_SOCKET, 0, 0), 7, true)
		add(jump(jeq, unix.SYS_SOCKETPAIR, 0, 0), 7, true)
	}
	// Everything else: allowed (tail[0] follows).
	n := len(body)
	for _, f := range fixes {
		off := uint8(n - f.at - 1 + f.target)
		if f.onTrue {
			body[f.at].Jt = off
		} else {
			body[f.at].Jf = off
		}
	}
	return append(body, tail...)
}

// installSeccomp installs the filter on the calling thread (locked to its
// goroutine by the caller), which must have no_new_privs set. With pol (an
// isolated command's policy) and a kernel that has what it needs
// (UnixSupervisorSupported), the filter sends connect to a unix-socket
// supervisor that this process serves from now on (serveUnixNotify),
// unless pol.NoUnixSupervisor.
func installSeccomp(pol *Policy) error {
	arch := seccompArch()
	if arch == 0 {
		return fmt.Errorf("sandbox: no seccomp filter for %s", runtime.GOARCH)
	}
	notify := pol != nil && !pol.NoUnixSupervisor && UnixSupervisorSupported() == nil
	prog := seccompProgram(arch, notify)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if pol != nil {
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
	}
	flags := uintptr(0)
	if notify {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("sandbox: installing the seccomp filter: %w", errno)
	}
	runtime.KeepAlive(prog)
	if notify {
		go serveUnixNotify(int(fd), *pol)
	}
	return nil
}
