package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Without namespaces (Policy without Isolate: a container without user
// namespaces, the non-root image), Landlock is the sandbox, and the helper
// used to confine itself before it forked the command. Then the helper was
// in the command's Landlock domain, and the command could signal it: kill
// its own helper (its supervisor, a child subreaper) and leave its setsid
// orphans re-parented to init — outside toold's process tree, where the
// control plane's and the shims' peer checks (pkg/peercred, proctree.go)
// no longer see them as toold's commands.
//
// So the helper stays unconfined, and the command's first process confines
// itself: the helper forks its own executable again in the confining
// stage, which applies the policy and execs the command in the same
// process (same pid, the parent-death signal kept). The command's domain
// starts below the helper: with Landlock's signal scope (ABI >= 6) nothing
// in it can signal the helper or toold. It costs one more program start
// per command, only where namespaces are missing.

// confineArg follows HelperName in the argv of the confining stage:
// [HelperName, confineArg, policy JSON, path, argv...].
const confineArg = "--confine-exec"

// confineRequested reports whether this helper is a confining stage.
func confineRequested() bool { return len(os.Args) > 4 && os.Args[1] == confineArg }

// confineExec is the confining stage: it applies the policy to itself and
// execs the command. It returns only when it could not (126: the policy,
// 127: the command).
func confineExec() int {
	var p Policy
	if err := json.Unmarshal([]byte(os.Args[2]), &p); err != nil {
		fmt.Fprintf(os.Stderr, "%s: the policy: %v\n", HelperName, err)
		return 126
	}
	if p.Supervised {
		unix.CloseOnExec(notifySendFD)
	}
	if err := confine(p); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", HelperName, err)
		return 126
	}
	// The seccomp filter (seccomp.go) is a thread's: installed on the
	// thread that execs the command. An isolated command's helper
	// installed its own, with the supervisor, on the thread that forked
	// this one (OwnNetns): this one adds the kernel surfaces only.
	runtime.LockOSThread()
	err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	if err == nil {
		pol := &p
		if p.OwnNetns {
			pol = nil
		}
		var fd int
		fd, err = installSeccomp(pol, p.Supervised)
		if err == nil && fd >= 0 {
			// To the helper, which supervises the command's connects.
			err = unix.Sendmsg(notifySendFD, []byte{0}, unix.UnixRights(fd), nil, 0)
			unix.Close(fd)
			unix.Close(notifySendFD)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", HelperName, err)
		return 126
	}
	err = syscall.Exec(os.Args[3], os.Args[4:], os.Environ())
	fmt.Fprintf(os.Stderr, "%s: starting %s: %v\n", HelperName, os.Args[3], err)
	return 127
}

// notifySendFD is the descriptor on which a supervised confining stage
// (Policy.Supervised) sends its seccomp filter's notify fd to the helper.
const notifySendFD = 3

// confinedStage returns the path and argv that run spec's command through
// the confining stage under spec.Policy. What the helper's own confine used
// to refuse before the command started is refused here, before the fork.
func confinedStage(spec Spec) (string, []string, error) {
	p := *spec.Policy
	if p.Require && LandlockABI() == 0 {
		return "", nil, fmt.Errorf("landlock is required but this kernel does not offer it")
	}
	if filepath.IsAbs(spec.Path) {
		if _, err := os.Stat(spec.Path); err != nil {
			return "", nil, fmt.Errorf("starting %s: %w", spec.Path, err)
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", nil, err
	}
	args := []string{HelperName, confineArg, string(b), spec.Path}
	if len(spec.Args) == 0 {
		args = append(args, spec.Path)
	}
	return "/proc/self/exe", append(args, spec.Args...), nil
}
