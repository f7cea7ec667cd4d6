package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
)

// profiles are the files --cpuprofile, --memprofile and --trace name: a CPU
// profile of the daemon's whole run and an allocation profile at its end, as
// `go test` writes them (make bench uses them for rows that miss their
// target), and an execution trace of the run (`go tool trace`; Run marks its
// start-up steps as regions).
var profiles struct{ cpu, mem, trace string }

// flagOutput receives usage and flag errors (tests read it).
var flagOutput io.Writer = os.Stderr

// envPrefix starts the environment variable of every flag: --shutdown-grace
// is also TOOLD_SHUTDOWN_GRACE. Containers take their settings this way.
const envPrefix = "TOOLD_"

// envName returns the environment variable that sets the flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// noEnv lists the flags no environment variable sets: --version only
// prints.
var noEnv = map[string]bool{"version": true}

// parseFlags reads the optional config file, then applies the environment
// and the flags over it: a flag wins over its TOOLD_* variable, which wins
// over the config file. An empty variable counts as unset, so a container
// can blank out a default of its image and let the config file decide.
func parseFlags(args []string) (*daemon.Main, error) {
	fs := flag.NewFlagSet("toold", flag.ContinueOnError)
	fs.SetOutput(flagOutput)
	var (
		cfgPath    = fs.String("config", "", "YAML config file (the environment and flags override it)")
		socket     = fs.String("socket", "", "unix socket path (default ./toold.sock; \"-\" disables)")
		socketMode = fs.String("socket-mode", "", "socket permissions: 0600 (default, toold's user only) or 0660 (and the socket's group)")
		listen     = fs.String("listen", "", "also serve TCP on this address, e.g. 127.0.0.1:7777")
		healthL    = fs.String("health-listen", "", "serve only gRPC health on this TCP address (for Kubernetes gRPC probes), e.g. :8081")
		ws         = fs.String("workspace", "", "workspace directory (default: current directory)")
		token      = fs.String("token", "", "require this bearer token")
		mode       = fs.String("approval-mode", "", "yolo, auto or ask (default auto)")
		policy     = fs.String("policy", "", "policy file (YAML or TOML); default: the built-in rules")
		logLevel   = fs.String("log-level", "", "debug, info, warn or error")
		logFormat  = fs.String("log-format", "", "text or json")
		grace      = fs.Duration("shutdown-grace", 0, "how long running calls may finish on SIGTERM")
		debugAddr  = fs.String("debug-addr", "", "serve pprof profiles on this loopback address, e.g. 127.0.0.1:6060")
		approvalT  = fs.Duration("approval-timeout", 0, "end calls that wait longer than this for an approval (0: wait)")
		mcpConfig  = fs.String("mcp-config", "", "JSON file with {\"mcpServers\": {...}} (Claude Desktop / Cursor format): MCP servers whose tools toold offers")
		mcpHTTP    = fs.Bool("mcp-http", false, "also serve the tools over MCP (streamable HTTP) at /mcp on the --listen address")
		shell      = fs.String("shell", "", "the shell that runs commands (default bash, else sh; none: toold starts without terminal_operations)")
		stateDir   = fs.String("state-dir", "", "where toold keeps state: the memory database (default $XDG_STATE_HOME/toold) and, when set, command outputs and the commands' temp dir (default $TMPDIR); must be writable")
		version    = fs.Bool("version", false, "print the version and exit")
	)
	fs.StringVar(&profiles.cpu, "cpuprofile", "", "write a CPU profile of the whole run to this file at exit")
	fs.StringVar(&profiles.mem, "memprofile", "", "write an allocation profile to this file at exit")
	fs.StringVar(&profiles.trace, "trace", "", "write an execution trace of the whole run to this file (go tool trace; start-up steps are regions)")
	fs.VisitAll(func(f *flag.Flag) {
		if !noEnv[f.Name] {
			f.Usage += " [$" + envName(f.Name) + "]"
		}
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: toold [flags]\n       toold mcp [flags]    serve the tools over MCP on stdin/stdout instead\n\n"+
			"Serves the ToolService over gRPC. Every flag can also be set by the environment variable in brackets;\n"+
			"a flag wins over its variable, a variable over the config file. Flags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := applyEnv(fs); err != nil {
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
	set(&cfg.SocketMode, *socketMode)
	set(&cfg.Listen, *listen)
	set(&cfg.HealthListen, *healthL)
	set(&cfg.Workspace, *ws)
	set(&cfg.Token, *token)
	set(&cfg.ApprovalMode, *mode)
	set(&cfg.PolicyFile, *policy)
	set(&cfg.Log.Level, *logLevel)
	set(&cfg.Log.Format, *logFormat)
	set(&cfg.DebugAddr, *debugAddr)
	set(&cfg.MCP.ConfigFile, *mcpConfig)
	set(&cfg.Terminal.Shell, *shell)
	set(&cfg.StateDir, *stateDir)
	set(&cfg.Terminal.Dir, *stateDir)
	cfg.MCP.HTTP = cfg.MCP.HTTP || *mcpHTTP
	if *grace > 0 {
		cfg.ShutdownGrace = config.Duration(*grace)
	}
	if *approvalT > 0 {
		cfg.ApprovalTimeout = config.Duration(*approvalT)
	}
	// Every configuration error (a flag, a variable, the file, or the
	// settings together) is found here, so that toold exits with one
	// status (2) for all of them; Run validates again.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &daemon.Main{Config: cfg}, nil
}

// applyEnv sets every flag the command line did not set from its TOOLD_*
// variable, when that is set and not empty. A value the flag rejects is an
// error naming the variable.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || noEnv[f.Name] {
			return
		}
		v := os.Getenv(envName(f.Name))
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
		}
	})
	return errors.Join(errs...)
}
