package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
)

// profiles are the files --cpuprofile and --memprofile name: a CPU profile
// of the daemon's whole run and an allocation profile at its end, as `go
// test` writes them (make bench uses them for rows that miss their target).
var profiles struct{ cpu, mem string }

// parseFlags reads the optional config file, then applies flags over it.
func parseFlags(args []string) (*daemon.Main, error) {
	fs := flag.NewFlagSet("toold", flag.ContinueOnError)
	var (
		cfgPath   = fs.String("config", "", "YAML config file (flags override it)")
		socket    = fs.String("socket", "", "unix socket path (default ./toold.sock; \"-\" disables)")
		listen    = fs.String("listen", "", "also serve TCP on this address, e.g. 127.0.0.1:7777")
		ws        = fs.String("workspace", "", "workspace directory (default: current directory)")
		token     = fs.String("token", "", "require this bearer token (default: $TOOLD_TOKEN)")
		mode      = fs.String("approval-mode", "", "yolo, auto or ask (default auto)")
		policy    = fs.String("policy", "", "policy file (YAML or TOML); default: the built-in rules")
		logLevel  = fs.String("log-level", "", "debug, info, warn or error")
		logFormat = fs.String("log-format", "", "text or json")
		grace     = fs.Duration("shutdown-grace", 0, "how long running calls may finish on SIGTERM")
		debugAddr = fs.String("debug-addr", "", "serve pprof profiles on this loopback address, e.g. 127.0.0.1:6060")
		approvalT = fs.Duration("approval-timeout", 0, "end calls that wait longer than this for an approval (0: wait)")
		mcpConfig = fs.String("mcp-config", "", "JSON file with {\"mcpServers\": {...}} (Claude Desktop / Cursor format): MCP servers whose tools toold offers")
		mcpHTTP   = fs.Bool("mcp-http", false, "also serve the tools over MCP (streamable HTTP) at /mcp on the --listen address")
		stateDir  = fs.String("state-dir", "", "where toold keeps state that outlives a run, such as the memory database (default $XDG_STATE_HOME/toold)")
		version   = fs.Bool("version", false, "print the version and exit")
	)
	fs.StringVar(&profiles.cpu, "cpuprofile", "", "write a CPU profile of the whole run to this file at exit")
	fs.StringVar(&profiles.mem, "memprofile", "", "write an allocation profile to this file at exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: toold [flags]\n       toold mcp [flags]    serve the tools over MCP on stdin/stdout instead\n\nServes the ToolService over gRPC. Flags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *version {
		fmt.Println("toold", daemon.Version)
		os.Exit(0)
	}
	cfg := config.Default()
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			return nil, err
		}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Socket, *socket)
	set(&cfg.Listen, *listen)
	set(&cfg.Workspace, *ws)
	set(&cfg.Token, os.Getenv("TOOLD_TOKEN"))
	set(&cfg.Token, *token)
	set(&cfg.ApprovalMode, *mode)
	set(&cfg.PolicyFile, *policy)
	set(&cfg.Log.Level, *logLevel)
	set(&cfg.Log.Format, *logFormat)
	set(&cfg.DebugAddr, *debugAddr)
	set(&cfg.MCP.ConfigFile, *mcpConfig)
	set(&cfg.StateDir, *stateDir)
	cfg.MCP.HTTP = cfg.MCP.HTTP || *mcpHTTP
	if *grace > 0 {
		cfg.ShutdownGrace = config.Duration(*grace)
	}
	if *approvalT > 0 {
		cfg.ApprovalTimeout = config.Duration(*approvalT)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return &daemon.Main{Config: cfg}, nil
}
