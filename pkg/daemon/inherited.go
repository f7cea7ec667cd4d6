package daemon

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every descriptor above stderr that toold's
// process holds close-on-exec. Go opens its own descriptors close-on-exec
// and passes a child exactly the files it names, but a descriptor toold
// inherited without the flag (a pipe or socket its parent — an agent host,
// a shell, a supervisor — left open) is passed on to every process toold
// starts: helpers and, through them, every command, sandboxed or not,
// which could then write to (or read from) its parent's other ends.
// close_range(2) does it in one call (Linux 5.11); older kernels get the
// flag per descriptor listed in /proc/self/fd.
func closeInheritedOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
