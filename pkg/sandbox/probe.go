package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// ProbeIsolation runs "sh -c 'exit 0'" isolated (Policy.Isolate) through r
// and returns why it could not, or nil: whether this machine lets toold
// make the sandbox's namespaces. The probe makes a network namespace of
// its own; ProbeIsolationIn runs it in a shared one.
func ProbeIsolation(r Runner) error {
	return ProbeIsolationIn(r, nil)
}

// ProbeIsolationIn is ProbeIsolation with the probe in ns (nil: a network
// namespace of its own), the way the isolated commands that share ns will
// run: the helper is born in the sandbox's other namespaces and joins ns
// (Stdio.Netns). A toold that shares one namespace among its commands
// probes in it at start: making (and later tearing down) a second one for
// the probe alone cost ~10 ms of the time to SERVING, and what the probe
// vouches for is then exactly what a command does (ns itself was made by
// OpenNetns, whose error says when the kernel refuses network namespaces).
func ProbeIsolationIn(r Runner, ns *Netns) error {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "toold-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := r.Start(ctx, Spec{
		Path: sh, Args: []string{"sh", "-c", "exit 0"}, Dir: dir, Grace: time.Second,
		Policy: &Policy{Isolate: true, Writable: []string{dir}},
	}, Stdio{Netns: ns.File()})
	if err != nil {
		return err
	}
	if exit := p.Exit(); exit.Code != 0 || exit.Err != nil {
		return fmt.Errorf("the probe command in the sandbox ended with %s", exit)
	}
	return nil
}
