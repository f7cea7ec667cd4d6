// Package procgroup is toold's one recipe for a child process that must not
// outlive its purpose: it runs in its own process group, ending it ends
// everything it started, and, when asked, the kernel kills it if toold
// dies. (The sandbox's helper and the terminal's processes add their own
// layers on top; this is the common base.)
package procgroup

import (
	"os/exec"
	"syscall"
	"time"
)

// Own makes cmd, not yet started, the leader of a new process group.
//
// dieWithParent no longer sets Pdeathsig: the kernel sends it when the
// *thread* that forked the child exits, not the process (golang/go#27505),
// and toold ends OS threads on purpose (the sandbox's goroutines that
// enter a namespace or a cgroup end locked to their thread, which the
// runtime then terminates) — a child forked earlier on such a thread was
// killed at random (MCP servers, hooks, test peers). What dieWithParent
// asks for is kept by other means: the caller's stdio pipes close when
// toold dies (an MCP stdio server ends at EOF), and hooks are bounded by
// their timeout. The parameter stays so callers say what they want.
func Own(cmd *exec.Cmd, dieWithParent bool) {
	_ = dieWithParent
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// KillOnCancel is Own for a cmd made by exec.CommandContext: when the
// context ends, the whole group is killed (not only the leader), and Wait
// returns at most wait later even if a grandchild holds the output pipes.
func KillOnCancel(cmd *exec.Cmd, dieWithParent bool, wait time.Duration) {
	Own(cmd, dieWithParent)
	cmd.Cancel = func() error { return Kill(cmd) }
	cmd.WaitDelay = wait
}

// Kill sends SIGKILL to the process group of a started cmd, sweeping up
// what its leader left behind; it does nothing for a cmd never started.
func Kill(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
