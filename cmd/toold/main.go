// Command toold is the tool-execution daemon. See the README.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toold/toold/pkg/sandbox"
)

func main() {
	// toold re-executes itself as the helper that supervises each command
	// (pkg/sandbox); that mode returns here only by exiting.
	sandbox.RunHelperIfRequested()
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		os.Exit(runMCP(os.Args[2:]))
	}
	m, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "toold:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "toold:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	stop() // a second signal kills at once
	m.Logger.Info("shutting down", "grace", time.Duration(m.Config.ShutdownGrace))
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown", "err", err)
		os.Exit(1)
	}
}
