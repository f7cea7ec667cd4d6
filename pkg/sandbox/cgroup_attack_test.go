package sandbox_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
)

// Commands that try to outlive their call: each leaves something behind as
// it exits — a double-forked setsid daemon that ignores SIGTERM, a loop that
// keeps forking while the command exits, a process group of its own that
// ignores every catchable signal — alone, several at once, and with a stop
// asked just as the command exits. Whatever the cgroup's watch (added only
// once a tree outlives its command or a stop is asked, see supervise) sees
// or misses, every leftover is killed once the grace ends, the call ends,
// the cgroup is neither watched nor holding a descriptor afterwards, and
// the leftovers are counted when the command exited with them running. Not
// parallel: the watch count is the shared Cgroups'.
func TestCgroupsLeftoverAttacks(t *testing.T) {
	c := openCgroups(t)
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	before := fds()
	tok := token(t)
	attacks := []struct {
		name   string
		script string
		// leftovers says the command surely exits with its tree running.
		leftovers bool
	}{
		{"setsid daemon ignoring TERM", `(setsid bash -c 'trap "" TERM HUP INT; exec sleep 100.%s' >/dev/null 2>&1 &); echo started`, true},
		{"double fork ignoring TERM", `( ( trap "" TERM; exec sleep 100.%s ) >/dev/null 2>&1 & ); exit 0`, true},
		{"forks while exiting", `(trap "" TERM; for i in $(seq 50); do (exec sleep 100.%s) >/dev/null 2>&1 & done) >/dev/null 2>&1 & exit 0`, false},
		{"fork loop ignoring TERM", `(trap "" TERM HUP; while :; do (exec sleep 100.%s) >/dev/null 2>&1 & sleep 0.01; done) >/dev/null 2>&1 & echo started`, true},
		{"own process group", `set -m; (trap "" TERM HUP INT QUIT USR1 USR2; exec sleep 100.%s) >/dev/null 2>&1 & echo started`, true},
	}
	run := func(t *testing.T, script string, stopAtExit bool) sandbox.Exit {
		p, out := cgStart(t, t.Context(), sandbox.Spec{}, fmt.Sprintf(script, tok))
		if stopAtExit {
			// The stop races the command's exit and the leftovers' start.
			p.Stop()
		}
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the command did not end")
		}
		out()
		return p.Exit()
	}
	for _, a := range attacks {
		for _, stop := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stop=%v", a.name, stop), func(t *testing.T) {
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						exit := run(t, a.script, stop)
						if !stop && a.leftovers && (exit.Leftovers < 1 || exit.Stopped) {
							t.Errorf("exit %+v: leftovers not counted", exit)
						}
					})
				}
				wg.Wait()
				checkClean(t, tok)
				if n := c.Watches(); n != 0 {
					t.Errorf("%d cgroups still watched after every call ended", n)
				}
			})
		}
	}
	if after := fds(); after > before {
		t.Errorf("descriptors: %d before, %d after the commands", before, after)
	}
}
