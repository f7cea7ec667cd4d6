package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
)

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
		logLevel  = fs.String("log-level", "", "debug, info, warn or error")
		logFormat = fs.String("log-format", "", "text or json")
		grace     = fs.Duration("shutdown-grace", 0, "how long running calls may finish on SIGTERM")
		version   = fs.Bool("version", false, "print the version and exit")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: toold [flags]\n\nServes the ToolService over gRPC. Flags:\n")
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
	set(&cfg.Log.Level, *logLevel)
	set(&cfg.Log.Format, *logFormat)
	if *grace > 0 {
		cfg.ShutdownGrace = config.Duration(*grace)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return &daemon.Main{Config: cfg}, nil
}
