package main

import "golang.org/x/sys/unix"

// nonDumpable makes toold's process non-dumpable (PR_SET_DUMPABLE 0), as
// early in main as it can: a process of the same user without
// CAP_SYS_PTRACE — a command when the operator turned the sandbox off —
// can then neither read /proc/<toold>/environ, mem or fd/* nor ptrace
// toold (the kernel's ptrace access check refuses it; /proc/<toold>'s
// files belong to root). toold reads its own /proc/self, which stays
// readable to itself; it writes no core dump (docs/policy.md says how to
// debug it). Helpers re-executed from toold's binary return before this
// (sandbox.RunHelperIfRequested): a command's exec makes it dumpable again
// anyway, shims stay dumpable (docs/policy.md).
func nonDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
