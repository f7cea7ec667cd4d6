package sandbox_test

import (
	"os"
	"testing"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// BenchmarkHelperTrue starts true under a helper (this small test binary)
// and waits for its tree to end: the helper's own cost.
func BenchmarkHelperTrue(b *testing.B) {
	spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	for b.Loop() {
		p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(b.Context(), spec, sandbox.Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
}

// BenchmarkCgroupTrue starts true in a cgroup of its own (no helper) and
// waits for it to end: the same work as BenchmarkHelperTrue in the other
// supervision mode, compared in the same run (docs/terminal.md).
func BenchmarkCgroupTrue(b *testing.B) {
	cg, err := sandbox.OpenCgroups(sandbox.CgroupConfig{
		Runner: sandbox.Runner{Args: sandbox.TestHelperArgs},
		Probe:  sandbox.Spec{Path: "/bin/true", Args: []string{"true"}},
	})
	testenv.Need(b, err, "cgroups v2 with a delegated subtree")
	defer cg.Close()
	spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	for b.Loop() {
		p, err := cg.Start(b.Context(), spec, sandbox.Stdio{})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
}

// BenchmarkIsolatedTrue starts true isolated (namespaces, masks, a fresh
// /proc, no capabilities, Landlock), without and with cgroup limits: what
// the sandbox adds to BenchmarkHelperTrue.
func BenchmarkIsolatedTrue(b *testing.B) {
	dir := b.TempDir()
	for _, limits := range []bool{false, true} {
		b.Run(map[bool]string{false: "namespaces", true: "namespaces+cgroup"}[limits], func(b *testing.B) {
			p := &sandbox.Policy{Isolate: true, Writable: []string{dir}}
			if limits {
				lim, err := sandbox.OpenLimits(0, 0)
				testenv.Need(b, err, "cgroup pids and memory controllers")
				defer lim.Close()
				p.Cgroups, p.Pids, p.Memory = lim.Dirs(), lim.Pids, lim.Memory
			}
			spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Policy: p}
			for b.Loop() {
				p, err := sandbox.Runner{Args: sandbox.TestHelperArgs}.Start(b.Context(), spec, sandbox.Stdio{})
				if err != nil {
					b.Fatal(err)
				}
				<-p.Done()
			}
		})
	}
}

// BenchmarkWarmTrue starts true isolated in a helper prepared ahead of time
// (Warm, with cgroup limits where they exist): what is left of
// BenchmarkIsolatedTrue on the command's path. Back to back, the pool's
// refill competes with the commands; with WARM_WAIT=1 the pool is full and
// idle before each command (the wait is not timed): the command's path
// alone. WARM_NOLIMITS=1 leaves the cgroup slots out. WARM_HELPER names
// the helper binary (toold's toold-helper, as toold runs it) instead of
// this test binary, whose Go start is larger.
func BenchmarkWarmTrue(b *testing.B) {
	dir := b.TempDir()
	ns, err := sandbox.OpenNetns("")
	testenv.Need(b, err, "namespaces for the sandbox")
	defer ns.Close()
	lim, err := sandbox.OpenLimits(0, 0)
	if err != nil || os.Getenv("WARM_NOLIMITS") != "" {
		// Without cgroup slots: what the slots cost, compared.
		lim.Close()
		lim = nil
	}
	defer lim.Close()
	pol := &sandbox.Policy{Isolate: true, Writable: []string{dir}}
	if lim != nil {
		pol.Pids, pol.Memory = lim.Pids, lim.Memory
	}
	r := sandbox.Runner{Args: sandbox.TestHelperArgs}
	if h := os.Getenv("WARM_HELPER"); h != "" {
		r = sandbox.Runner{Helper: h}
	}
	w := sandbox.NewWarm(r, ns.File(), lim, time.Second, 4, func() *sandbox.Policy { return pol })
	defer w.Close()
	spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Policy: pol, Grace: time.Second}
	cold := 0
	for b.Loop() {
		if os.Getenv("WARM_WAIT") != "" {
			b.StopTimer()
			for w.ReadyNow() < 4 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			b.StartTimer()
		}
		p, ok, err := w.Start(b.Context(), spec, sandbox.Stdio{})
		if !ok {
			cold++
			s := spec
			p, err = r.Start(b.Context(), s, sandbox.Stdio{Netns: ns.File()})
		}
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
	b.ReportMetric(float64(cold)/float64(b.N), "cold/op")

}

// BenchmarkIsolatedParallel starts true isolated from 8 goroutines at once,
// each with a helper of its own ("cold", as without a pool) or through a
// pool of 4 ready helpers that falls back to one of its own ("warm"): the
// pool must not make concurrent commands slower.
func BenchmarkIsolatedParallel(b *testing.B) {
	dir := b.TempDir()
	ns, err := sandbox.OpenNetns("")
	testenv.Need(b, err, "namespaces for the sandbox")
	defer ns.Close()
	pol := &sandbox.Policy{Isolate: true, Writable: []string{dir}}
	spec := sandbox.Spec{Path: "/bin/true", Args: []string{"true"}, Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Policy: pol, Grace: time.Second}
	r := sandbox.Runner{Args: sandbox.TestHelperArgs}
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			var w *sandbox.Warm
			if warm {
				w = sandbox.NewWarm(r, ns.File(), nil, time.Second, 4, func() *sandbox.Policy { return pol })
				defer w.Close()
			}
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, ok, err := w.Start(b.Context(), spec, sandbox.Stdio{})
					if !ok {
						p, err = r.Start(b.Context(), spec, sandbox.Stdio{Netns: ns.File()})
					}
					if err != nil {
						b.Error(err)
						return
					}
					<-p.Done()
				}
			})
		})
	}
}
