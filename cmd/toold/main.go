// Command toold is the tool-execution daemon. See the README.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
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
