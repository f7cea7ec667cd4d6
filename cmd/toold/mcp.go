package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/toold/toold/pkg/daemon"
)

// runMCP is `toold mcp [flags]`: the daemon's tool stack (same flags,
// config file, workspace, policy and MCP servers) serving one MCP session
// on stdin and stdout, for an MCP client that starts toold as a stdio
// server. Logs go to stderr only: stdout carries the protocol. It serves no
// unix socket or TCP unless --socket or --listen is given, so it does not
// collide with a toold daemon in the same directory. It returns the exit
// status: 0 when the client closed the session, 1 (exitFailed) when toold
// could not start or serve, 2 (exitConfig) on configuration errors.
func runMCP(args []string) int {
	m, err := parseMCPFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "toold mcp:", err)
		return exitConfig
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "toold mcp:", err)
		return exitFailed
	}
	serveErr := m.ServeMCP(ctx, os.Stdin, os.Stdout)
	stop()
	code := 0
	if serveErr != nil {
		m.Logger.Error("serving MCP", "err", serveErr)
		code = 1
	}
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown", "err", err)
		code = 1
	}
	return code
}

// parseMCPFlags parses toold's flags for `toold mcp`. The socket and TCP
// listener of the config file are not used; --socket and --listen are.
func parseMCPFlags(args []string) (*daemon.Main, error) {
	m, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	if !flagGiven(args, "socket") {
		m.Config.Socket = "-"
	}
	if !flagGiven(args, "listen") {
		m.Config.Listen = ""
		m.Config.MCP.HTTP = false
	}
	return m, nil
}

// flagGiven reports whether the command line sets the flag name, in any
// form the flag package accepts (-name, --name, with =value or not).
func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
