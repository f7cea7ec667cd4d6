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
//
// --dialect NAME (toold mcp's own flag) presents another agent's tool set:
// claude-code, gemini-cli, codex, openhands or swe-agent.
func parseMCPFlags(args []string) (*daemon.Main, error) {
	dialect, args, err := takeFlag(args, "dialect")
	if err != nil {
		return nil, err
	}
	m, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	m.MCPDialect = dialect
	if !flagGiven(args, "socket") {
		m.Config.Socket = "-"
	}
	if !flagGiven(args, "listen") {
		m.Config.Listen = ""
		m.Config.MCP.HTTP = false
	}
	return m, nil
}

// takeFlag removes the string flag name (-name v, --name v, --name=v) from
// args and returns its value.
func takeFlag(args []string, name string) (string, []string, error) {
	var val string
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		bare := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		switch {
		case bare != a && bare == name:
			if i+1 >= len(args) {
				return "", nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			val = args[i+1]
			i++
		case bare != a && strings.HasPrefix(bare, name+"="):
			val = strings.TrimPrefix(bare, name+"=")
		default:
			out = append(out, a)
		}
	}
	return val, out, nil
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
