// Command toold is the tool-execution daemon. See the README.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/toold/toold/pkg/sandbox"
)

// Exit statuses of toold and toold mcp.
const (
	// exitFailed: toold could not start (a socket in use, a state
	// directory held by another toold, a policy file that does not parse)
	// or failed while serving.
	exitFailed = 1
	// exitConfig: the configuration is wrong — a flag, a TOOLD_*
	// variable, a key or value of the config file, or settings that do not
	// go together.
	exitConfig = 2
)

func main() {
	// toold re-executes itself as the helper that supervises each command
	// (pkg/sandbox); that mode returns here only by exiting.
	sandbox.RunHelperIfRequested()
	if err := nonDumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "toold: PR_SET_DUMPABLE:", err)
		os.Exit(exitFailed)
	}
	// Orphans of a command that killed its helper stay in toold's tree,
	// where the control plane's peer rule sees them (pkg/sandbox
	// reaper.go). Without it toold works as before.
	if err := sandbox.AdoptOrphans(); err != nil {
		fmt.Fprintln(os.Stderr, "toold: orphans of commands are not adopted:", err)
	}
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		os.Exit(runMCP(os.Args[2:]))
	}
	restoreGC := lessGCWhileStarting()
	m, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		// Every configuration error: status 2 (exitConfig).
		fmt.Fprintln(os.Stderr, "toold:", err)
		os.Exit(exitConfig)
	}
	stopProfiles, err := startProfiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toold:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = m.Run(ctx)
	restoreGC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toold:", err)
		os.Exit(exitFailed)
	}
	<-ctx.Done()
	stop() // a second signal kills at once
	m.Logger.Info("shutting down", "grace", time.Duration(m.Config.ShutdownGrace))
	err = m.Close()
	if perr := stopProfiles(); perr != nil {
		m.Logger.Error("writing profiles", "err", perr)
	}
	if err != nil {
		m.Logger.Error("shutdown", "err", err)
		os.Exit(1)
	}
}

// startupGCPercent is the garbage collector's target (GOGC) while toold
// starts.
const startupGCPercent = 400

// lessGCWhileStarting raises the garbage collector's target for the start-up,
// from the flags to SERVING, and returns the function that restores it.
// Start-up allocates a few MB that are mostly garbage at once; with Go's
// default target the collector ran four times in its 80 ms, on two cores,
// each time taking CPU from the sandbox probe that SERVING waits for (exec
// to SERVING: p50 115 → 96 ms in alternated starts under load). Run ends by
// returning start-up's garbage to the system (debug.FreeOSMemory); what an
// idle toold keeps of the larger start-up heap is ~0.3 MB of the runtime's
// own (anonymous RSS 8.3 → 8.6 MB in the same runs). The target GOGC sets is back in force
// from SERVING on; GOGC=off, or a target above this one, is left alone;
// GOMEMLIMIT still bounds the heap meanwhile.
func lessGCWhileStarting() (restore func()) {
	prev := debug.SetGCPercent(startupGCPercent)
	if prev < 0 || prev >= startupGCPercent {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}

// startProfiles starts the CPU profile --cpuprofile and the execution trace
// --trace ask for; the function it returns stops them and writes the
// allocation profile of --memprofile.
func startProfiles() (func() error, error) {
	var cpu, tr *os.File
	if profiles.trace != "" {
		f, err := os.Create(profiles.trace)
		if err != nil {
			return nil, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return nil, err
		}
		tr = f
	}
	if profiles.cpu != "" {
		f, err := os.Create(profiles.cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			if tr != nil {
				trace.Stop()
				tr.Close()
			}
			return nil, err
		}
		cpu = f
	}
	return func() error {
		var errs []error
		if tr != nil {
			trace.Stop()
			errs = append(errs, tr.Close())
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		if profiles.mem != "" {
			f, err := os.Create(profiles.mem)
			if err != nil {
				return errors.Join(append(errs, err)...)
			}
			errs = append(errs, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		return errors.Join(errs...)
	}, nil
}
