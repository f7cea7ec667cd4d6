// Package sandbox runs the commands and terminal sessions of toold in a
// supervised and optionally confined process tree.
//
// # The helper
//
// toold never runs a command as its own direct child. It starts a helper —
// its own executable again (/proc/self/exe, or a configured binary), in a
// hidden mode selected by argv[0] == HelperName — and the helper runs the
// command. The helper:
//
//   - marks itself a child subreaper (PR_SET_CHILD_SUBREAPER), so every
//     process the command starts stays below it, even one that calls setsid
//     and whose parent exits ("setsid sleep 100 &");
//   - optionally confines the command with Landlock: the command's first
//     process applies it before it execs the command (confine_exec.go), so
//     the command and everything it starts inherit the restriction, while
//     the helper stays outside it and cannot be signalled from inside
//     (Landlock restricts the calling process and its future children; the
//     daemon itself is never restricted);
//   - reaps every process of the tree, so no zombie is left;
//   - when the command exits and processes it started are still running
//     ("leftovers"), stops them: the command is over, and nothing it
//     started outlives it — unless Spec.KeepTree, for background processes
//     whose servers daemonize: then it supervises them until they end or
//     are stopped;
//   - on SIGTERM (or SIGHUP, or the daemon's death) stops the whole tree:
//     SIGTERM (and SIGHUP and SIGCONT for terminals) to every descendant,
//     then SIGKILL to whatever is left after the grace period, repeated
//     until the tree is empty. Descendants are found through /proc; because
//     the helper is a subreaper, that walk finds all of them.
//
// The daemon holds one os/exec Cmd per helper: Cmd.Cancel sends SIGTERM to
// the helper (which stops the tree). A helper that has not finished within
// the grace period plus a margin is swept with its tree: SIGKILL to every
// descendant (found through /proc while the helper, a subreaper, still
// holds them, so also those that left its process group), to its process
// group, then to the helper; Cmd.WaitDelay kills the helper later still,
// should the sweep not have ended it.
//
// Protocol: the daemon writes a JSON Spec on the helper's fd 3 and closes
// it; the helper answers on fd 4 with one JSON line when the command started
// (its pid) or could not start, and one when the tree is gone (the exit
// status). A binary that embeds toold's daemon must call
// RunHelperIfRequested first thing in main (and in TestMain, where the test
// binary stands in for toold); Start explains the mistake when it was not.
//
// # Confinement
//
// With a Policy, the helper applies Landlock: the whole file system is
// readable and executable, but only Policy.Writable directories (the
// workspace and a temp dir), a few device files and the terminal devices
// are writable; with NoNetwork, TCP connect and bind are refused as well
// — bind only without the supervisor: an isolated command's network
// namespace has loopback only, so its own test servers may listen there,
// and without namespaces a supervised command may bind ports the kernel
// picks (port 0); the supervisor decides its connects (Landlock does not
// cover UDP on ABI < 10, nor unix sockets by path: the seccomp filter
// makes no UDP socket, and the supervisor decides unix connects); and
// on ABI >= 6 the tree cannot signal processes outside it or connect to
// abstract unix sockets outside it. Landlock also sets no_new_privs, so
// setuid programs (sudo) do not gain privileges.
//
// With Policy.Isolate the helper also makes the namespaces, the cgroup and
// the file system view of the sandbox (ns.go). Warm (warm.go) starts such
// helpers ahead of time, so that most of that cost is off the command's
// path.
package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Policy confines a command's process tree. The zero Policy allows writes
// nowhere; callers list the workspace and a temp dir in Writable.
type Policy struct {
	// Writable are directories the tree may create, change and delete
	// files in (recursively). They must exist.
	Writable []string `json:"writable"`
	// NoNetwork refuses TCP connect, and TCP bind unless Isolate where
	// the unix-socket supervisor is in force (unixnotify.go): an isolated
	// command binds in a network namespace that has loopback only, and
	// the supervisor lets it connect to its own listeners and to no other
	// command's.
	NoNetwork bool `json:"no_network"`
	// ConnectPorts, with NoNetwork, are the TCP ports connect is still
	// allowed to (toold's egress proxy). Landlock matches ports, not
	// addresses.
	ConnectPorts []uint16 `json:"connect_ports,omitempty"`
	// Require makes the helper refuse to run the command when the kernel
	// has no Landlock at all. Either way, the helper enforces as much of
	// the policy as the kernel's ABI supports (see Describe).
	Require bool `json:"require"`

	// Isolate runs the command in namespaces of its own (see ns.go): a
	// mount namespace where everything but Writable is read-only and Hide
	// is masked, a pid namespace with a fresh /proc, a network namespace
	// with only loopback (and Proxy forwarded into it), IPC and UTS
	// namespaces; every capability is dropped. It needs root (or
	// CAP_SYS_ADMIN) in the daemon's user namespace and Linux 5.12.
	Isolate bool `json:"isolate,omitempty"`
	// OwnNetns says the command runs in a network namespace with
	// loopback only, so Landlock leaves TCP bind alone (its own test
	// servers). The isolated helper sets it when it hands the policy on
	// to its Landlock stage without Isolate; callers set Isolate.
	OwnNetns bool `json:"own_netns,omitempty"`
	// Hide are absolute paths (symbolic links resolved) the command must
	// not read: directories are covered by an empty read-only tmpfs,
	// files by /dev/null. Paths that do not exist are skipped. Isolate
	// only.
	Hide []string `json:"hide,omitempty"`
	// ReadOnly are absolute paths (symbolic links resolved) inside
	// Writable directories that the command may read but not change: each
	// directory (or regular file) is bind-mounted onto itself read-only,
	// with everything below it, which also makes it a mount point the
	// command cannot rename or remove (EBUSY) — nor replace by one of its
	// own — and pins the directories between it and its writable one. The
	// workspace's git directories and .git files are (see
	// pkg/tools/terminal). Paths that do not exist, or are neither
	// directories nor regular files, are skipped. Isolate only: Landlock
	// cannot take a directory back from a writable one.
	ReadOnly []string `json:"read_only,omitempty"`
	// Proxy is toold's egress proxy ("127.0.0.1:PORT"), the only way out
	// of the isolated network namespace: the helper listens on the same
	// address inside it and forwards each connection there. Empty: no
	// network at all. Isolate only.
	Proxy string `json:"proxy,omitempty"`
	// Cgroups are the parents of the command's cgroups (Limits.Dirs);
	// Pids and Memory its limits. Isolate only.
	Cgroups []string `json:"cgroups,omitempty"`
	Pids    int      `json:"pids,omitempty"`
	Memory  int64    `json:"memory,omitempty"`
	// NoUnixSupervisor turns the unix-socket supervisor off for an
	// isolated command (unixnotify.go): its connects go straight to the
	// kernel and it may make unix datagram sockets, so unix sockets bound
	// outside after it started are reachable unless the BPF LSM guard
	// (UnixGuard) holds them. For tests of that guard alone; toold never
	// sets it. Isolate only.
	NoUnixSupervisor bool `json:"no_unix_supervisor,omitempty"`
	// Supervised says the command runs without namespaces (no Isolate)
	// under the unix-socket supervisor of its helper, which decides its
	// connects (unixnotify.go), so Landlock lets it bind TCP to port 0
	// (ephemeralBind): its own test servers. The
	// helper sets it on the policy it hands to the command's confining
	// stage (supervisedWithoutNamespaces); callers leave it unset.
	Supervised bool `json:"supervised,omitempty"`
}

// supervisedWithoutNamespaces says whether a command confined by p
// without namespaces runs under its helper's unix-socket supervisor: with
// NoNetwork (the supervisor decides TCP as well as unix sockets), unless
// NoUnixSupervisor, where the kernel has what the supervisor needs.
func (p Policy) supervisedWithoutNamespaces() bool {
	return !p.Isolate && !p.OwnNetns && p.NoNetwork && !p.NoUnixSupervisor && UnixSupervisorSupported() == nil
}

// loopbackBind says whether Landlock leaves TCP bind alone for p: in the
// command's own network namespace (loopback only), and only where the
// unix-socket supervisor decides its connects — who may reach a listener;
// without it Landlock's connect rule (the proxy's port only) is all there
// is, and a listener on the proxy's port at another address could catch
// another command's connects.
//
// Without namespaces, under the supervisor (Supervised), Landlock allows
// bind to port 0 only (ephemeralBind): the command's listeners are in the
// host's (the container's) network namespace, where a fixed port could
// take one another service of the host means to listen on, and the
// supervisor lets no other command connect to them (nor this one to
// another's), so its test servers, which listen on a port the kernel
// picks, run.
func (p Policy) loopbackBind() bool {
	return (p.Isolate || p.OwnNetns) && !p.NoUnixSupervisor && UnixSupervisorSupported() == nil
}

// ephemeralBind says whether Landlock allows TCP bind to port 0 (a port
// the kernel picks from the ephemeral range) and refuses every other port:
// without namespaces, under the supervisor.
func (p Policy) ephemeralBind() bool {
	return p.NoNetwork && p.Supervised && !p.loopbackBind()
}

// LandlockABI returns the Landlock ABI version the kernel offers, 0 when it
// has none (not built in, or disabled at boot).
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Describe says in one line what p enforces on this kernel, for logs.
func (p Policy) Describe() string {
	abi := LandlockABI()
	if abi == 0 {
		return "landlock unavailable on this kernel: commands run unconfined"
	}
	s := fmt.Sprintf("landlock ABI %d: writes only in %s", abi, strings.Join(p.Writable, ", "))
	if p.NoNetwork {
		if abi >= 4 && p.loopbackBind() {
			s += "; no TCP connect"
		} else if abi >= 4 && (p.ephemeralBind() || p.supervisedWithoutNamespaces()) {
			s += "; no TCP connect, TCP bind to ephemeral ports only"
		} else if abi >= 4 {
			s += "; no TCP connect or bind"
		} else {
			s += "; network NOT restricted (needs ABI 4)"
		}
	}
	return s
}

// devices are device files any command may open for writing (and use
// terminal ioctls on).
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// confine applies p to the calling process (all its threads) and its future
// children. It is called in the helper, never in the daemon.
func confine(p Policy) error {
	if p.Require && LandlockABI() == 0 {
		return fmt.Errorf("landlock is required but this kernel does not offer it")
	}
	cfg := landlock.V7 // file system (with ioctl on devices), TCP, scopes
	switch {
	case !p.NoNetwork:
		cfg.HandledAccessNet = 0
	case p.loopbackBind():
		cfg.HandledAccessNet = landlock.AccessNetSet(llsys.AccessNetConnectTCP)
	}
	cfg = cfg.BestEffort()
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts").WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/shm").IgnoreIfMissing(),
	}
	if p.NoNetwork {
		for _, port := range p.ConnectPorts {
			rules = append(rules, landlock.ConnectTCP(port))
		}
		if p.ephemeralBind() {
			rules = append(rules, landlock.BindTCP(0))
		}
	}
	if len(p.Writable) > 0 {
		// Refer lets mv and ln work between directories of the workspace.
		rules = append(rules, landlock.RWDirs(p.Writable...).WithRefer())
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// Layer is one layer of the boundary around commands, as toold reports it
// (log, Welcome, ListTools, health): whether it is in force here, and how
// or why not.
type Layer struct {
	// Name is one of the Layer* names.
	Name string
	// InForce says the layer holds for every command.
	InForce bool
	// Detail says how it is enforced, or why it is missing.
	Detail string
}

// The layers, in the order they are reported.
const (
	LayerWrites       = "writes"
	LayerReads        = "reads"
	LayerNetwork      = "network"
	LayerControlPlane = "control_plane"
	LayerResources    = "resources"
)

// confineThread applies p to the calling thread only (locked by the
// caller, never to be unlocked) and the children it forks; ok is false when
// this kernel's Landlock is older than ABI 5, where only confine (which
// applies it to every thread of the process) implements p.
//
// It builds the same ruleset as confine. It exists because go-landlock
// applies a ruleset to every thread of the process (a stop-the-world
// signal to each thread before ABI 8), which on a busy machine costs
// milliseconds, and because a warm helper (warm.go) needs a thread that
// keeps its capabilities beside the confined one (Landlock forbids mounts
// to a confined thread): it confines its forking thread ahead of time and
// masks late secrets from another.
func confineThread(p Policy) (ok bool, err error) {
	abi := LandlockABI()
	if abi < 5 {
		return false, nil
	}
	const (
		read  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
		write = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar |
			llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo |
			llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
		file = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSReadFile
	)
	// landlock.V7's file system rights (all of ABI 5 to 8), its TCP
	// rights with NoNetwork (connect only, with Isolate), and its scopes
	// where the kernel has them.
	attr := llsys.RulesetAttr{HandledAccessFS: (1 << 16) - 1}
	switch {
	case p.NoNetwork && p.loopbackBind():
		attr.HandledAccessNet = llsys.AccessNetConnectTCP
	case p.NoNetwork:
		attr.HandledAccessNet = llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return true, fmt.Errorf("landlock: creating the ruleset: %w", err)
	}
	defer unix.Close(fd)
	add := func(paths []string, access uint64, ignoreMissing bool) error {
		for _, path := range paths {
			pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				if ignoreMissing && errors.Is(err, unix.ENOENT) {
					continue
				}
				return fmt.Errorf("landlock: %s: %w", path, err)
			}
			err = llsys.LandlockAddPathBeneathRule(fd, &llsys.PathBeneathAttr{ParentFd: pfd, AllowedAccess: access}, 0)
			unix.Close(pfd)
			if err != nil {
				return fmt.Errorf("landlock: %s: %w", path, err)
			}
		}
		return nil
	}
	if err := add([]string{"/"}, read, false); err != nil {
		return true, err
	}
	if err := add(devices, file|llsys.AccessFSIoctlDev, true); err != nil {
		return true, err
	}
	if err := add([]string{"/dev/pts"}, read|write|llsys.AccessFSIoctlDev, true); err != nil {
		return true, err
	}
	if err := add([]string{"/dev/shm"}, read|write, true); err != nil {
		return true, err
	}
	if err := add(p.Writable, read|write|llsys.AccessFSRefer, false); err != nil {
		return true, err
	}
	if p.NoNetwork {
		for _, port := range p.ConnectPorts {
			if err := llsys.LandlockAddNetPortRule(fd, &llsys.NetPortAttr{AllowedAccess: llsys.AccessNetConnectTCP, Port: uint64(port)}, 0); err != nil {
				return true, fmt.Errorf("landlock: TCP port %d: %w", port, err)
			}
		}
		if p.ephemeralBind() {
			if err := llsys.LandlockAddNetPortRule(fd, &llsys.NetPortAttr{AllowedAccess: llsys.AccessNetBindTCP, Port: 0}, 0); err != nil {
				return true, fmt.Errorf("landlock: TCP bind to port 0: %w", err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return true, fmt.Errorf("landlock: no_new_privs: %w", err)
	}
	// Without a thread-sync flag: this thread only.
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return true, fmt.Errorf("landlock: %w", err)
	}
	return true, nil
}
