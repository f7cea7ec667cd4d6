package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The unix-socket supervisor: what holds a unix socket bound outside the
// sandbox after a command started (no mask covers it) out of the command's
// reach where the kernel does not let toold load its BPF LSM guard
// (UnixGuard), and beside it where it does.
//
// An isolated command's seccomp filter (seccomp.go) sends every connect to
// its helper (SECCOMP_RET_USER_NOTIF): the helper that installed the
// filter serves the notify fd (serveUnixNotify) for as long as it lives —
// the init of the command's pid namespace, which lives exactly as long as
// the command's tree (when it dies the kernel kills the tree; a command
// that outlives toold keeps its helper). Should the notify fd ever close
// while the tree lives, every connect fails with ENOSYS: closed, never
// open.
//
// A connect is emulated, never let through
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE): after a CONTINUE the kernel reads the
// command's memory and descriptor table again, where another thread may
// have swapped the address or the descriptor since the check. The helper
// takes the command's socket itself (pidfd_getfd: the same open file
// description), copies the address once (process_vm_readv, the
// notification checked valid after the copy, so the pid was the caller's),
// decides on its copy, connects its duplicate itself and answers with the
// result. By the socket's family:
//
//   - AF_UNIX, a path: resolved as the command would (its working
//     directory for a relative path, /proc/self meaning the caller; the
//     helper shares the command's mount namespace and root) to an O_PATH
//     descriptor of the file; allowed only when it is a socket bound in
//     the sandbox's network namespace — sock_diag (UNIX_DIAG with
//     UDIAG_SHOW_VFS) from the helper, which is in that namespace, lists
//     the bound sockets' device and inode — and then connected through
//     /proc/self/fd/N of that descriptor (the magic link ends at the
//     inode checked: no second walk of the path). An inode is bound to one
//     socket, once. Whatever a divergent resolution finds is checked the
//     same way, so it can only refuse. Refused: EPERM.
//   - AF_UNIX, an abstract name: abstract names are the socket's network
//     namespace's (the sandbox's, shared by toold's commands), and
//     Landlock's scope (ABI >= 6) kept a command to the abstract sockets
//     of its own domain — which the helper's threads are not in. So the
//     helper connects as given only when the listening socket (sock_diag,
//     UDIAG_SHOW_NAME) is held by a process of the caller's pid namespace
//     (its command's tree: a descriptor "socket:[inode]" in /proc/*/fd),
//     EPERM otherwise (ECONNREFUSED when nothing has the name); the
//     helper holds that listener across the connect (a unix socket's name
//     is freed only with the socket), so the name cannot change hands.
//   - AF_INET, AF_INET6 TCP, with Policy.NoNetwork: the helper's threads
//     are not in the command's Landlock domain (which allows connect only
//     to Policy.ConnectPorts), so the helper decides (tcpAllowed):
//     connected to the proxy (a port of Policy.ConnectPorts at
//     Policy.Proxy's address), and to a loopback port when every socket
//     listening on it in the sandbox's network namespace (sock_diag,
//     INET_DIAG) is held by a process of the caller's pid namespace — the
//     command's own test servers, never another command's: the namespace
//     is shared by toold's commands, of every conversation. Refused:
//     ECONNREFUSED when nothing listens on that port, EACCES (as Landlock
//     would) otherwise. Bind is not the supervisor's: where it is in
//     force, Landlock leaves bind alone in the namespace, which has
//     loopback only (Policy.loopbackBind).
//     The listeners checked are held across the connect (pidfd_getfd of
//     the holding process's descriptor: none can close and free the port
//     for another command's listener) and the port is checked again after
//     it: a listener not the command's that joined meanwhile (a
//     SO_REUSEPORT group) resets the connection, EACCES — and so does a
//     server's end of it that another process holds (a listener that
//     joined, got the connection, accepted it and left again between the
//     two checks; one that left without accepting took it with it).
//   - Without namespaces (the Landlock-only sandbox, Policy.Supervised),
//     the helper serves the notify fd its command's confining stage sent
//     it, and "the command's" is the helper's descendants rather than its
//     pid namespace: a unix socket by path is connected only when a
//     process of the command's tree holds it (there is no sandbox network
//     namespace to list), an abstract name or a loopback port likewise.
//   - anything else: connected as given.
//
// The filter is installed with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV:
// once the helper has received a connect, only a fatal signal interrupts
// the caller's wait, so a connect is never done twice (a signal handler
// that returns restarts the call). The helper makes itself non-dumpable
// before it installs the filter, so that nothing in the sandbox can trace
// it, read its memory or take its descriptors (the notify fd).
//
// Unix datagram sockets are not made in the sandbox (the filter refuses
// socket and socketpair of AF_UNIX with a type other than SOCK_STREAM and
// SOCK_SEQPACKET, SOCK_RAW being a datagram socket there): a datagram
// socket names its peer by path at every sendto and sendmsg, whose
// message header a filter cannot read, and emulating every send of every
// socket (data, SCM_RIGHTS, credentials) is not worth what it would cost.
// A stream socket refuses an address at send (EOPNOTSUPP or EISCONN) and a
// seqpacket socket ignores it, so connect is the only door by path.
//
// What differs for the command: the peer credentials a server of its own
// sees (SO_PEERCRED, SCM_CREDENTIALS of a stream) are the helper's — the
// same uid and gid, the pid of the sandbox's init — because the helper
// makes the connection; unix datagram sockets fail with EPERM (syslog(3)
// and sd_notify already had no socket to reach in the sandbox); a process
// that made itself non-dumpable still connects (the helper has the
// capabilities to take its socket).

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  struct {
		Nr   int32
		Arch uint32
		IP   uint64
		Args [6]uint64
	}
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// ioctlNotifIDValid is SECCOMP_IOCTL_NOTIF_ID_VALID (_IOW('!', 2, __u64)).
const ioctlNotifIDValid = 0x40082102

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd of a thread.
const pidfdThread = unix.O_EXCL

// UnixSupervisorDetail describes the supervisor for the network layer.
const UnixSupervisorDetail = "unix sockets outside the sandbox refused whenever they were bound: every connect is emulated by the command's helper (seccomp user notification), which connects only to sockets bound in the sandbox's network namespace; no unix datagram sockets"

// UnixSupervisorSupported says whether this kernel has what the
// supervisor needs (user notification, Linux 5.0; pidfd_getfd, 5.6; a
// killable wait once received, 5.19) on an architecture the filter knows,
// or why not. Where it does, every isolated command's filter has the
// supervisor's entries; where it does not, none has, and the network
// layer's detail says so.
func UnixSupervisorSupported() error { return unixSupervisorSupported() }

var unixSupervisorSupported = sync.OnceValue(func() error {
	if seccompArch() == 0 {
		return fmt.Errorf("no seccomp filter for this architecture")
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return err
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("kernel release %q: %w", rel, err)
	}
	if major < 5 || major == 5 && minor < 19 {
		return fmt.Errorf("kernel %s: the seccomp supervisor needs Linux 5.19 (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)", rel)
	}
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action))); errno != 0 {
		return fmt.Errorf("the kernel has no seccomp user notification: %w", errno)
	}
	return nil
})

// supervisor decides the connects of one command's tree.
type supervisor struct {
	// pol is the command's policy.
	pol Policy
	// tree is the pid of the process whose descendants are the command's
	// tree (the helper, a subreaper, in the Landlock-only sandbox: no pid
	// namespace of its own); 0 when the command's tree is every process
	// of the helper's pid namespace (an isolated command, whose helper is
	// that namespace's init).
	tree int
}

// eachProc calls f with the pid of each process of the command's tree, as
// a /proc name, the caller's process (caller, its pid) first — most often
// the one that holds the listener it connects to (a test and its server) —
// until f returns false. The rest of the tree is listed only when f asks
// for more: in the Landlock-only sandbox that is a read of every
// process's stat (Descendants).
func (s *supervisor) eachProc(caller string, f func(pid string) bool) {
	if !f(caller) {
		return
	}
	var rest []string
	if s.tree == 0 {
		rest, _ = readDirNames("/proc")
	} else {
		for _, p := range Descendants(s.tree) {
			rest = append(rest, strconv.Itoa(p))
		}
	}
	for _, p := range rest {
		if p == caller || p[0] < '0' || p[0] > '9' {
			continue
		}
		if !f(p) {
			return
		}
	}
}

// readDirNames returns the names in dir.
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// serveUnixNotify serves the notify fd of a filter installed for the
// command s supervises, until the process exits. Each connect is answered
// on a goroutine of its own: a connect that blocks (a full backlog) holds
// up no other.
func serveUnixNotify(fd int, s *supervisor) {
	for {
		n := new(seccompNotif)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n)))
		switch errno {
		case 0:
			go answerUnixNotify(fd, n, s)
		case unix.EINTR, unix.ENOENT:
			// ENOENT: the caller was killed before the notification was
			// received.
		default:
			// Cannot happen with a valid fd; should it, every connect of
			// the tree fails (ENOSYS) rather than wait.
			unix.Close(fd)
			return
		}
	}
}

// answerUnixNotify emulates one notified system call and answers it.
func answerUnixNotify(fd int, n *seccompNotif, s *supervisor) {
	resp := seccompNotifResp{ID: n.ID}
	if errno := s.emulateConnect(fd, n); errno != 0 {
		resp.Error = -int32(errno)
	}
	// ENOENT when the caller is gone: nothing to answer.
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

// notifValid reports whether notification id is still pending (its caller
// alive and waiting).
func notifValid(fd int, id uint64) bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return errno == 0
}

// emulateConnect performs the notified connect on the caller's behalf (see
// above) and returns its errno.
func (s *supervisor) emulateConnect(fd int, n *seccompNotif) unix.Errno {
	if n.Data.Nr != unix.SYS_CONNECT {
		return unix.ENOSYS
	}
	tid := int(n.Pid)
	pidfd, err := openPidfd(tid)
	if err != nil {
		return unix.ESRCH // the caller is gone: the answer is not seen
	}
	defer unix.Close(pidfd)
	if !notifValid(fd, n.ID) {
		return unix.ESRCH
	}
	sock, err := unix.PidfdGetfd(pidfd, int(int32(n.Data.Args[0])), 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	defer unix.Close(sock)
	size := int(int32(n.Data.Args[2]))
	if size < 0 || size > unix.SizeofSockaddrAny {
		return unix.EINVAL
	}
	addr := make([]byte, size)
	if size > 0 {
		got, err := unix.ProcessVMReadv(tid, []unix.Iovec{{Base: &addr[0], Len: uint64(size)}},
			[]unix.RemoteIovec{{Base: uintptr(n.Data.Args[1]), Len: size}}, 0)
		if err != nil || got != size {
			return unix.EFAULT
		}
	}
	// The copy was the caller's memory: its pid was not reused meanwhile.
	if !notifValid(fd, n.ID) {
		return unix.ESRCH
	}
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return errnoOf(err, unix.ENOTSOCK)
	}
	switch domain {
	case unix.AF_UNIX:
		return s.connectUnix(sock, addr, tid)
	case unix.AF_INET, unix.AF_INET6:
		return s.connectTCP(sock, addr, tgidOf(tid))
	}
	return rawConnect(sock, addr)
}

// openPidfd returns a pidfd of the thread tid, or of its process where the
// kernel has no thread pidfds.
func openPidfd(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, pidfdThread)
	if err == nil {
		return fd, nil
	}
	b, rerr := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if rerr != nil {
		return -1, err
	}
	_, rest, ok := strings.Cut(string(b), "\nTgid:")
	if !ok {
		return -1, err
	}
	line, _, _ := strings.Cut(rest, "\n")
	tgid, cerr := strconv.Atoi(strings.TrimSpace(line))
	if cerr != nil {
		return -1, err
	}
	return unix.PidfdOpen(tgid, 0)
}

// errnoOf returns err's errno, or def.
func errnoOf(err error, def unix.Errno) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return def
}

// rawConnect connects sock to the address bytes addr.
func rawConnect(sock int, addr []byte) unix.Errno {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(len(addr)))
	return errno
}

// connectTCP connects the socket sock (AF_INET, AF_INET6) to addr when
// the command may (see above), and returns the errno. Without
// Policy.NoNetwork, or when sock is not a TCP stream, or addr is one the
// kernel would refuse (short, of another family), it connects as given.
// To the proxy (a port of Policy.ConnectPorts, at Policy.Proxy's address
// when it has one): connected. To a loopback port: when every listener of
// it is held by the command's tree (holdListeners), connected while the
// supervisor holds a duplicate of each, and checked again after the
// connect: a listener that joined the port meanwhile (a SO_REUSEPORT
// group) and is not the command's resets the connection (EACCES).
// Otherwise ECONNREFUSED when nothing listens on that loopback port,
// EACCES (as Landlock would) when something else does or the address is
// not local.
func (s *supervisor) connectTCP(sock int, addr []byte, caller string) unix.Errno {
	port, local, errno := s.tcpTarget(sock, addr)
	if errno != 0 {
		return errno
	}
	if !local {
		return rawConnect(sock, addr)
	}
	held, inos, errno := s.holdListeners(port, caller, nil)
	defer closeAll(held)
	if errno != 0 {
		return errno
	}
	if errno := rawConnect(sock, addr); errno != 0 {
		return errno
	}
	// Those checked count as the command's even if it closed them
	// meanwhile (a server that accepts once and closes its listener):
	// only a listener that joined since is looked for.
	after, _, errno := s.holdListeners(port, caller, inos)
	closeAll(after)
	if errno == 0 {
		errno = s.serverEndHeld(sock, caller)
	}
	if errno != 0 {
		// Disconnect (AF_UNSPEC): an established TCP connection is reset.
		unspec := make([]byte, unix.SizeofSockaddrInet6)
		_ = rawConnect(sock, unspec)
		return unix.EACCES
	}
	return 0
}

// tcpTarget decides what connectTCP does with addr: local says the
// address is a loopback (or unspecified) port that only the command's own
// listeners may take (port); errno refuses; neither: connect as given.
func (s *supervisor) tcpTarget(sock int, addr []byte) (port uint16, local bool, errno unix.Errno) {
	pol := &s.pol
	if !pol.NoNetwork || len(addr) < 4 {
		return 0, false, 0
	}
	typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || typ != unix.SOCK_STREAM {
		return 0, false, 0
	}
	proto, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err != nil || proto != unix.IPPROTO_TCP && proto != unix.IPPROTO_MPTCP {
		return 0, false, 0
	}
	var ip netip.Addr
	switch binary.NativeEndian.Uint16(addr) {
	case unix.AF_INET:
		if len(addr) < unix.SizeofSockaddrInet4 {
			return 0, false, 0
		}
		ip = netip.AddrFrom4([4]byte(addr[4:8]))
	case unix.AF_INET6:
		if len(addr) < unix.SizeofSockaddrInet6-4 { // SIN6_LEN_RFC2133: no scope id
			return 0, false, 0
		}
		ip = netip.AddrFrom16([16]byte(addr[8:24])).Unmap()
	default:
		return 0, false, 0 // AF_UNSPEC: a disconnect
	}
	port = binary.BigEndian.Uint16(addr[2:4])
	if slices.Contains(pol.ConnectPorts, port) {
		proxy, err := netip.ParseAddrPort(pol.Proxy)
		if err != nil || proxy.Addr().Unmap() == ip {
			return 0, false, 0
		}
	}
	if !ip.IsLoopback() && !ip.IsUnspecified() { // 0.0.0.0 and :: mean this host
		return 0, false, unix.EACCES
	}
	return port, true, 0
}

// closeAll closes fds.
func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// holdListeners returns duplicates of every socket listening on TCP port
// in the helper's network namespace, and their inodes, when each is held
// by a process of the command's tree (pidfd_getfd of that process's
// descriptor, checked to be the same socket): while the supervisor holds
// them, none of them can close and free the port for another command's
// listener. Otherwise it holds nothing and returns ECONNREFUSED when
// nothing listens on the port, EACCES when another listens on it. Every
// listener of the port counts, whatever its address and family: which of
// them a connect would reach is the kernel's choice (SO_REUSEPORT groups,
// wildcard and dual-stack binds). Listeners whose inode is in known (held
// already) are neither held again nor looked for; with known, nothing
// listening on the port is no refusal.
func (s *supervisor) holdListeners(port uint16, caller string, known []uint32) ([]int, []uint32, unix.Errno) {
	var inos []uint32
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		ls, err := tcpListeners(family)
		if err != nil {
			return nil, nil, unix.EACCES
		}
		for _, l := range ls {
			if l.port != port || slices.Contains(known, l.ino) {
				continue
			}
			if l.ino == 0 { // no file: no process holds it
				return nil, nil, unix.EACCES
			}
			inos = append(inos, l.ino)
		}
	}
	if len(inos) == 0 {
		if known != nil {
			return nil, nil, 0
		}
		return nil, nil, unix.ECONNREFUSED
	}
	held, ok := s.hold(inos, caller)
	if !ok {
		return nil, nil, unix.EACCES
	}
	return held, inos, 0
}

// tcpListener is a listening TCP socket as sock_diag reports it.
type tcpListener struct {
	port uint16
	ino  uint32
}

// tcpListeners returns the listening TCP sockets of family in the calling
// thread's network namespace (sock_diag, INET_DIAG).
func tcpListeners(family uint8) ([]tcpListener, error) {
	const (
		hdrLen = unix.SizeofNlMsghdr
		reqLen = 56 // struct inet_diag_req_v2
		msgLen = 72 // struct inet_diag_msg
	)
	req := make([]byte, hdrLen+reqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1) // seq
	req[hdrLen] = family
	req[hdrLen+1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[hdrLen+4:], 1<<unix.BPF_TCP_LISTEN)
	var out []tcpListener
	err := sockDiag(req, func(data []byte) {
		if len(data) >= msgLen {
			out = append(out, tcpListener{port: binary.BigEndian.Uint16(data[4:]), ino: binary.NativeEndian.Uint32(data[68:])})
		}
	})
	return out, err
}

// serverEndHeld returns 0 when the server's end of the loopback connection
// sock just made is not the end of another: not accepted yet (it waits in
// the queue of a listener — every listener of the port was checked as the
// command's after the connect, and a listener that left meanwhile took its
// queue with it, reset), gone, or held by a process of the command's tree
// (caller first). EACCES when another process accepted it: a listener
// that joined the port, got the connection, accepted it and left again
// between the supervisor's two checks. The server's end is looked up by
// the connection's addresses (sock_diag, one hash lookup; a dump of the
// established sockets walks the kernel's whole table, milliseconds).
func (s *supervisor) serverEndHeld(sock int, caller string) unix.Errno {
	local, err := unix.Getsockname(sock)
	if err != nil {
		return unix.EACCES
	}
	peer, err := unix.Getpeername(sock)
	if err != nil {
		return 0 // reset already: nothing to reach
	}
	const (
		hdrLen = unix.SizeofNlMsghdr
		reqLen = 56 // struct inet_diag_req_v2
		msgLen = 72 // struct inet_diag_msg
	)
	req := make([]byte, hdrLen+reqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1) // seq
	r := req[hdrLen:]
	r[1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], ^uint32(0))
	// The server's end: its source is the client's peer, its destination
	// the client.
	switch l := local.(type) {
	case *unix.SockaddrInet4:
		p, ok := peer.(*unix.SockaddrInet4)
		if !ok {
			return unix.EACCES
		}
		r[0] = unix.AF_INET
		binary.BigEndian.PutUint16(r[8:], uint16(p.Port))
		binary.BigEndian.PutUint16(r[10:], uint16(l.Port))
		copy(r[12:], p.Addr[:])
		copy(r[28:], l.Addr[:])
	case *unix.SockaddrInet6:
		p, ok := peer.(*unix.SockaddrInet6)
		if !ok {
			return unix.EACCES
		}
		r[0] = unix.AF_INET6
		binary.BigEndian.PutUint16(r[8:], uint16(p.Port))
		binary.BigEndian.PutUint16(r[10:], uint16(l.Port))
		copy(r[12:], p.Addr[:])
		copy(r[28:], l.Addr[:])
	default:
		return unix.EACCES
	}
	binary.NativeEndian.PutUint32(r[48:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(r[52:], ^uint32(0))
	var ino uint32
	err = sockDiag(req, func(data []byte) {
		if len(data) >= msgLen {
			ino = binary.NativeEndian.Uint32(data[68:])
		}
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return 0 // gone
	case err != nil:
		return unix.EACCES
	case ino != 0 && !s.holds(ino, caller):
		return unix.EACCES
	}
	return 0
}

// connectUnix connects the unix socket sock to addr, the caller tid's
// address (see above).
func (s *supervisor) connectUnix(sock int, addr []byte, tid int) unix.Errno {
	if len(addr) <= 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX {
		return rawConnect(sock, addr) // what the kernel refuses
	}
	if addr[2] == 0 {
		// The listener held across the connect: its name stays its own
		// (a unix socket's address is released with the socket only).
		held, errno := s.holdAbstract(addr[2:], tgidOf(tid))
		defer closeAll(held)
		if errno != 0 {
			return errno
		}
		return rawConnect(sock, addr)
	}
	path := addr[2:]
	if i := slices.Index(path, 0); i >= 0 {
		path = path[:i]
	}
	file, errno := openAsCaller(string(path), tid)
	if errno != 0 {
		return errno
	}
	defer unix.Close(file)
	if errno := s.boundInSandbox(file, tid); errno != 0 {
		return errno
	}
	name := "/proc/self/fd/" + strconv.Itoa(file)
	via := make([]byte, 2, 2+len(name)+1)
	binary.NativeEndian.PutUint16(via, unix.AF_UNIX)
	via = append(append(via, name...), 0)
	return rawConnect(sock, via)
}

// openAsCaller opens path (O_PATH) as the thread tid would resolve it.
func openAsCaller(path string, tid int) (int, unix.Errno) {
	proc := "/proc/" + strconv.Itoa(tid)
	// The helper resolves in its own root, which is the command's: a
	// command cannot chroot (no capabilities). Should they differ, no.
	var root unix.Stat_t
	own := ownRoot()
	if unix.Stat(proc+"/root", &root) != nil || own == nil || root.Dev != own.Dev || root.Ino != own.Ino {
		return -1, unix.EPERM
	}
	if strings.HasPrefix(path, "/") {
		// The caller's /proc/self, not the helper's.
		if rest, ok := strings.CutPrefix(path, "/proc/self/"); ok {
			path = "/proc/" + tgidOf(tid) + "/" + rest
		} else if rest, ok := strings.CutPrefix(path, "/proc/thread-self/"); ok {
			path = proc + "/" + rest
		}
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, errnoOf(err, unix.ENOENT)
		}
		return fd, 0
	}
	cwd, err := unix.Open(proc+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, unix.ESRCH
	}
	defer unix.Close(cwd)
	fd, err := unix.Openat(cwd, path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errnoOf(err, unix.ENOENT)
	}
	return fd, 0
}

// ownRoot is the helper's root directory (nil if it cannot be read); it
// does not change.
var ownRoot = sync.OnceValue(func() *unix.Stat_t {
	var st unix.Stat_t
	if unix.Stat("/", &st) != nil {
		return nil
	}
	return &st
})

// tgidOf returns the process id of thread tid, as a string (tid itself
// when it cannot be read).
func tgidOf(tid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err == nil {
		if _, rest, ok := strings.Cut(string(b), "\nTgid:"); ok {
			line, _, _ := strings.Cut(rest, "\n")
			return strings.TrimSpace(line)
		}
	}
	return strconv.Itoa(tid)
}

// boundInSandbox returns 0 when file (O_PATH) is a socket the command may
// connect to: bound in the helper's network namespace (the sandbox's) for
// an isolated command; without namespaces (s.tree), bound in it by a
// socket a process of the command's tree (the caller, thread tid, first)
// holds. ECONNREFUSED when it is not a socket (as connect would), EPERM
// otherwise.
func (s *supervisor) boundInSandbox(file int, tid int) unix.Errno {
	var st unix.Stat_t
	if err := unix.Fstat(file, &st); err != nil {
		return unix.EPERM
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return unix.ECONNREFUSED
	}
	// sock_diag reports 32 bits of the inode: a larger one could match
	// another inode's low bits, so it is never matched.
	if st.Ino>>32 != 0 {
		return unix.EPERM
	}
	bound, err := unixDiag(udiagShowVFS)
	if err != nil {
		return unix.EPERM
	}
	want := vfsID{dev: kernelDev(st.Dev), ino: uint32(st.Ino)}
	for _, e := range bound {
		if e.vfs != want {
			continue
		}
		if s.tree == 0 || s.holds(e.ino, tgidOf(tid)) {
			return 0
		}
		return unix.EPERM
	}
	return unix.EPERM
}

// holdAbstract returns a duplicate of the socket listening on the
// abstract name (its leading NUL included) in the helper's network
// namespace when a process of the command's tree holds it (hold),
// ECONNREFUSED when nothing listens on it, EPERM otherwise.
func (s *supervisor) holdAbstract(name []byte, caller string) ([]int, unix.Errno) {
	bound, err := unixDiag(udiagShowName)
	if err != nil {
		return nil, unix.EPERM
	}
	var ino uint32
	for _, e := range bound {
		if e.name == string(name) && e.state == tcpListen {
			ino = e.ino
			break
		}
	}
	if ino == 0 {
		return nil, unix.ECONNREFUSED
	}
	held, ok := s.hold([]uint32{ino}, caller)
	if !ok {
		return nil, unix.EPERM
	}
	return held, 0
}

// tcpListen is TCP_LISTEN, the state sock_diag reports for a listening
// socket (unix sockets included).
const tcpListen = 10

// holds reports whether a process of the command's tree (caller, the
// caller's pid, first) holds a descriptor of the socket ino.
func (s *supervisor) holds(ino uint32, caller string) bool {
	link := "socket:[" + strconv.FormatUint(uint64(ino), 10) + "]"
	found := false
	s.eachProc(caller, func(p string) bool {
		fds, _ := readDirNames("/proc/" + p + "/fd")
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + p + "/fd/" + fd); err == nil && l == link {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// hold returns a duplicate of each socket of inos, taken (pidfd_getfd)
// from a process of the command's tree (caller, the caller's pid, first)
// that holds it and checked to be that socket; ok is false, and nothing
// is held, when one of them is not held by the command's tree.
func (s *supervisor) hold(inos []uint32, caller string) (fds []int, ok bool) {
	links := make(map[string]int, len(inos)) // "socket:[ino]" -> index
	for i, ino := range inos {
		links["socket:["+strconv.FormatUint(uint64(ino), 10)+"]"] = i
	}
	got := make([]int, len(inos))
	for i := range got {
		got[i] = -1
	}
	left := len(inos)
	s.eachProc(caller, func(p string) bool {
		names, _ := readDirNames("/proc/" + p + "/fd")
		pidfd := -1
		defer func() {
			if pidfd >= 0 {
				unix.Close(pidfd)
			}
		}()
		for _, n := range names {
			l, err := os.Readlink("/proc/" + p + "/fd/" + n)
			if err != nil {
				continue
			}
			i, found := links[l]
			if !found || got[i] >= 0 {
				continue
			}
			if pidfd < 0 {
				pid, _ := strconv.Atoi(p)
				if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
					pidfd = -1
					return true
				}
			}
			target, _ := strconv.Atoi(n)
			fd, err := unix.PidfdGetfd(pidfd, target, 0)
			if err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Ino != uint64(inos[i]) {
				unix.Close(fd) // the descriptor changed since its link was read
				continue
			}
			got[i] = fd
			if left--; left == 0 {
				return false
			}
		}
		return true
	})
	if left > 0 {
		for _, fd := range got {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, false
	}
	return got, true
}

// vfsID is a bound unix socket's file as sock_diag reports it: the
// kernel's device number (major << 20 | minor) and the inode's low 32 bits.
type vfsID struct{ dev, ino uint32 }

// kernelDev converts a stat device number to the kernel's encoding.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)&0xfffff
}

// diagEntry is a unix socket as sock_diag reports it.
type diagEntry struct {
	state uint8  // its state (tcpListen for a listener)
	ino   uint32 // the socket's inode (socket:[ino])
	vfs   vfsID  // its file, with udiagShowVFS (zero for none)
	name  string // its address, with udiagShowName ("" for none)
}

// What unixDiag asks to be shown (UDIAG_SHOW_*).
const (
	udiagShowName = 0x1
	udiagShowVFS  = 0x2
)

// diagBufs are unixDiag's receive buffers.
var diagBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// unixDiag returns the unix sockets of the calling thread's network
// namespace (sock_diag, UNIX_DIAG), with what show asks for.
func unixDiag(show uint32) ([]diagEntry, error) {
	const (
		attrName = 0 // UNIX_DIAG_NAME
		attrVFS  = 1 // UNIX_DIAG_VFS
		hdrLen   = unix.SizeofNlMsghdr
		reqLen   = 24 // struct unix_diag_req
		msgLen   = 16 // struct unix_diag_msg
	)
	req := make([]byte, hdrLen+reqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1) // seq
	req[hdrLen] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(req[hdrLen+4:], 0xffffffff) // every state
	binary.NativeEndian.PutUint32(req[hdrLen+12:], show)
	var out []diagEntry
	err := sockDiag(req, func(data []byte) {
		if len(data) < msgLen {
			return
		}
		e := diagEntry{state: data[2], ino: binary.NativeEndian.Uint32(data[4:])}
		for a := data[msgLen:]; len(a) >= 4; {
			l := int(binary.NativeEndian.Uint16(a))
			if l < 4 || l > len(a) {
				break
			}
			switch binary.NativeEndian.Uint16(a[2:]) {
			case attrVFS:
				if l >= 12 {
					e.vfs = vfsID{ino: binary.NativeEndian.Uint32(a[4:]), dev: binary.NativeEndian.Uint32(a[8:])}
				}
			case attrName:
				e.name = string(a[4:l])
			}
			a = a[min((l+3)&^3, len(a)):]
		}
		out = append(out, e)
	})
	return out, err
}

// sockDiag sends the request req (its netlink header included) to
// sock_diag in the calling thread's network namespace and calls each with
// every answer's payload: a dump's until its end, a lookup's one. An
// error answer is returned (wrapping its errno).
func sockDiag(req []byte, each func(data []byte)) error {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	const hdrLen = unix.SizeofNlMsghdr
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	dump := binary.NativeEndian.Uint16(req[6:])&unix.NLM_F_DUMP == unix.NLM_F_DUMP
	bp := diagBufs.Get().(*[]byte)
	defer diagBufs.Put(bp)
	buf := *bp
	for {
		n, _, err := unix.Recvfrom(s, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		for b := buf[:n]; len(b) >= hdrLen; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < hdrLen || l > len(b) {
				return errors.New("sock_diag: a malformed answer")
			}
			typ, data := binary.NativeEndian.Uint16(b[4:]), b[hdrLen:l]
			b = b[min((l+3)&^3, len(b)):]
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(data) >= 4 {
					if e := -int32(binary.NativeEndian.Uint32(data)); e > 0 {
						return fmt.Errorf("sock_diag: %w", unix.Errno(e))
					}
				}
				return errors.New("sock_diag: an error answer")
			}
			each(data)
			if !dump {
				return nil // one answer, no NLMSG_DONE
			}
		}
	}
}
