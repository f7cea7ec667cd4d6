package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// ErrProbeUnfinished is the probe not finishing within ProbeTimeout: on a
// machine too loaded to start a process in that time it says nothing about
// whether the kernel lets toold make the sandbox's namespaces, and a caller
// must not take it for a refusal (and run commands unconfined): the
// commands themselves fail if the kernel does refuse.
var ErrProbeUnfinished = errors.New("sandbox: the isolation probe did not finish in time")

// ProbeTimeout bounds the isolation probe. A kernel that refuses a namespace
// refuses it at once; the bound is for a machine so loaded that starting
// the helper takes seconds (a battery run at load 158 once took over 10 s).
const ProbeTimeout = 60 * time.Second

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
	return probeIsolationIn(r, ns, ProbeTimeout)
}

func probeIsolationIn(r Runner, ns *Netns, timeout time.Duration) error {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "toold-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := r.Start(ctx, Spec{
		Path: sh, Args: []string{"sh", "-c", "exit 0"}, Dir: dir, Grace: time.Second,
		Policy: &Policy{Isolate: true, Writable: []string{dir}},
	}, Stdio{Netns: ns.File()})
	if err == nil {
		if exit := p.Exit(); exit.Code != 0 || exit.Err != nil {
			err = fmt.Errorf("the probe command in the sandbox ended with %s", exit)
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%s): %v", ErrProbeUnfinished, timeout, err)
	}
	return err
}
