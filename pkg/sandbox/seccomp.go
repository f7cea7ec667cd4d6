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
// With notify (where the kernel has what the supervisor needs:
// unixnotify.go), connect goes to the command's unix-socket supervisor
// (SECCOMP_RET_USER_NOTIF). With notify or Policy.NoNetwork, the sockets a
// command makes are limited: AF_UNIX only as a stream or seqpacket (a
// datagram socket addresses a socket by path at every send), AF_INET and
// AF_INET6 only as a TCP stream (no UDP — a datagram names its peer at
// every send, which a filter cannot read —, no raw, ICMP or SCTP socket):
// EPERM; AF_NETLINK; no other family (EAFNOSUPPORT: AF_VSOCK would reach
// the VM's host, AF_PACKET the link). And TCP Fast Open is refused
// (EOPNOTSUPP, as where the kernel's client side is off): MSG_FASTOPEN on
// sendto, sendmsg and sendmmsg connects without connect(2) — past the
// supervisor and Landlock's port rule —, and TCP_FASTOPEN_CONNECT defers
// the connection past the supervisor's decision.
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

// seccompProgram returns the filter for arch; notify sends connect to the
// unix-socket supervisor, sockets limits the sockets a command makes (the
// families and types above).
func seccompProgram(arch uint32, notify, sockets bool) []unix.SockFilter {
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		and  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		// seccomp_data: nr at 0, arch at 4, args from 16 (the low 32
		// bits of args[0] at 16 on little-endian machines).
		offNr, offArch, offArg0, offArg1, offArg2, offArg3 = 0, 4, 16, 24, 32, 40
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	eafnosupport := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	eopnotsupp := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP))
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
	}
	// The returns at the end, addressed from each test (jumps are
	// relative: to instruction i+1+offset).
	tail := []unix.SockFilter{
		stmt(ret, allow),  // 0
		stmt(ret, eperm),  // 1
		stmt(ret, enosys), // 2
		// 3: clone and unshare: refused when args[0] has CLONE_NEWUSER.
		stmt(ldW, offArg0),
		jump(jset, cloneNewUser, 0, 1),
		stmt(ret, eperm),
		stmt(ret, allow),
		// 7: socket and socketpair, by family (args[0]), type (args[1]
		// without SOCK_NONBLOCK and SOCK_CLOEXEC) and protocol (args[2]).
		stmt(ldW, offArg0),
		jump(jeq, unix.AF_UNIX, 3, 0),      // 8 -> 12
		jump(jeq, unix.AF_INET, 6, 0),      // 9 -> 16
		jump(jeq, unix.AF_INET6, 5, 0),     // 10 -> 16
		jump(jeq, unix.AF_NETLINK, 12, 11), // 11 -> 24 (allow), else 23
		// 12: AF_UNIX as a stream or seqpacket only.
		stmt(ldW, offArg1),
		stmt(and, 0xf),
		jump(jeq, unix.SOCK_STREAM, 9, 0),    // 14 -> 24
		jump(jeq, unix.SOCK_SEQPACKET, 8, 9), // 15 -> 24, else 25
		// 16: AF_INET, AF_INET6 as a TCP stream only (protocol 0,
		// IPPROTO_TCP, IPPROTO_MPTCP): no UDP, raw, ICMP or SCTP socket.
		stmt(ldW, offArg1),
		stmt(and, 0xf),
		jump(jeq, unix.SOCK_STREAM, 0, 6), // 18 -> 19, else 25
		stmt(ldW, offArg2),
		jump(jeq, 0, 3, 0),                  // 20 -> 24
		jump(jeq, unix.IPPROTO_TCP, 2, 0),   // 21 -> 24
		jump(jeq, unix.IPPROTO_MPTCP, 1, 2), // 22 -> 24, else 25
		stmt(ret, eafnosupport),             // 23: any other family
		stmt(ret, allow),                    // 24
		stmt(ret, eperm),                    // 25
		// 26: to the supervisor.
		stmt(ret, unix.SECCOMP_RET_USER_NOTIF),
		// 27: sendto, sendmmsg: no MSG_FASTOPEN in args[3].
		stmt(ldW, offArg3),
		jump(jset, unix.MSG_FASTOPEN, 2, 3), // 28 -> 31, else 32
		// 29: sendmsg: no MSG_FASTOPEN in args[2].
		stmt(ldW, offArg2),
		jump(jset, unix.MSG_FASTOPEN, 0, 1), // 30 -> 31, else 32
		stmt(ret, eopnotsupp),               // 31
		stmt(ret, allow),                    // 32
		// 33: setsockopt: not TCP_FASTOPEN_CONNECT (level args[1],
		// name args[2]).
		stmt(ldW, offArg1),
		jump(jeq, unix.IPPROTO_TCP, 0, 2), // 34 -> 35, else 37
		stmt(ldW, offArg2),
		jump(jeq, unix.TCP_FASTOPEN_CONNECT, 1, 0), // 36 -> 38, else 37
		stmt(ret, allow),                           // 37
		stmt(ret, eopnotsupp),                      // 38
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
		add(jump(jeq, unix.SYS_CONNECT, 0, 0), 26, true)
	}
	if sockets {
		add(jump(jeq, unix.SYS_SOCKET, 0, 0), 7, true)
		add(jump(jeq, unix.SYS_SOCKETPAIR, 0, 0), 7, true)
		add(jump(jeq, unix.SYS_SENDTO, 0, 0), 27, true)
		add(jump(jeq, unix.SYS_SENDMMSG, 0, 0), 27, true)
		add(jump(jeq, unix.SYS_SENDMSG, 0, 0), 29, true)
		add(jump(jeq, unix.SYS_SETSOCKOPT, 0, 0), 33, true)
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
// goroutine by the caller), which must have no_new_privs set. pol is the
// command's policy (nil: the kernel surfaces only); with pol.NoNetwork or
// notify the filter limits the sockets a command makes (families and
// types, above). With notify it sends connect to a unix-socket supervisor
// (unixnotify.go) and returns the notify fd, which the caller serves
// (serveUnixNotify) or hands to the process that will; -1 otherwise.
// Callers set notify only where UnixSupervisorSupported.
func installSeccomp(pol *Policy, notify bool) (int, error) {
	arch := seccompArch()
	if arch == 0 {
		return -1, fmt.Errorf("sandbox: no seccomp filter for %s", runtime.GOARCH)
	}
	sockets := notify || pol != nil && pol.NoNetwork
	prog := seccompProgram(arch, notify, sockets)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(0)
	if notify {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("sandbox: installing the seccomp filter: %w", errno)
	}
	runtime.KeepAlive(prog)
	if !notify {
		return -1, nil
	}
	return int(fd), nil
}
