package config

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/workspace"
)

// Terminal configures shell commands, background processes and terminal
// sessions (terminal_operations and TerminalService). Zero values take the
// defaults noted.
//
//	terminal:
//	  shell: bash
//	  sandbox: auto            # auto (default), require or off
//	  network: proxy           # proxy (default with a sandbox), false or true
//	  writable: [/home/me/go/pkg/mod]
//	  hide: [/srv/secrets]     # masked besides the sensitive paths
//	  pids_max: 1024           # processes of one command's tree
//	  memory_max: 4294967296   # bytes of memory of one command's tree
//	  kill_grace: 2s
//	  keep_per_call: 67108864  # bytes of one command's output kept
//	  keep_total: 1073741824   # bytes of all kept output
type Terminal struct {
	// Shell runs commands (Shell -c COMMAND) and is the default program of
	// sessions (default bash).
	Shell string `yaml:"shell"`
	// SessionArgs are Shell's arguments in sessions (default -il: an
	// interactive login shell).
	SessionArgs []string `yaml:"session_args"`
	// Sandbox says how every command, background process and session is
	// confined (see docs/policy.md, "The boundary"): auto (the default)
	// uses every layer this machine offers — namespaces (secrets masked,
	// everything read-only but the workspace, the temp dir and Writable, a
	// private /proc, no network but the egress proxy), cgroup limits and
	// Landlock — and says at start which are missing and why; require
	// refuses to start unless every layer is in force; off runs commands
	// unconfined (an operator's explicit choice). landlock is the former
	// name of auto.
	Sandbox string `yaml:"sandbox"`
	// Network: with a sandbox, proxy (the default) gives commands no
	// network but toold's egress proxy (host rules and the private-address
	// guard; see network.go), false none at all, true the host's network
	// unconfined. Without a sandbox: true (the default) or proxy (only
	// HTTP(S)_PROXY is set).
	Network NetworkMode `yaml:"network"`
	// Writable are more directories sandboxed commands may write in.
	Writable []string `yaml:"writable"`
	// Hide are more paths sandboxed commands cannot read, besides the
	// sensitive paths of the policy (~/.ssh, cloud credentials, .env
	// files, ...), shell histories and toold's own state.
	Hide []string `yaml:"hide"`
	// PidsMax and MemoryMax limit each sandboxed command's tree (default
	// 1024 processes and 4 GiB; see sandbox.OpenLimits).
	PidsMax   int   `yaml:"pids_max"`
	MemoryMax int64 `yaml:"memory_max"`
	// PassEnv names the variables of toold's environment that commands
	// inherit (default terminal.DefaultPassEnv: PATH, HOME, LANG, ...).
	// TOOLD_* variables are never passed.
	PassEnv []string `yaml:"pass_env"`
	// Env is added to every command's environment.
	Env map[string]string `yaml:"env"`
	// KillGrace is the time a stopped process tree gets between SIGTERM
	// and SIGKILL (default 2s).
	KillGrace Duration `yaml:"kill_grace"`
	// Dir is where toold keeps command outputs and the sandbox's temp dir,
	// in a fresh subdirectory removed at shutdown (default $TMPDIR).
	Dir string `yaml:"dir"`
	// KeepPerCall bounds the bytes kept of one command's output (default
	// 64 MiB); KeepTotal of all kept output (default 1 GiB; the oldest
	// outputs are evicted first).
	KeepPerCall int64 `yaml:"keep_per_call"`
	KeepTotal   int64 `yaml:"keep_total"`
	// KeepCount bounds how many finished commands' outputs are kept
	// (default 1000); KeepAge how long after its command ended one is
	// kept (default 1h). The oldest go first.
	KeepCount int      `yaml:"keep_count"`
	KeepAge   Duration `yaml:"keep_age"`
	// SessionBuffer is how many bytes of output a session keeps (default
	// 1 MiB).
	SessionBuffer int `yaml:"session_buffer"`
	// MaxProcesses bounds the running background processes of a
	// conversation, MaxSessions its open sessions (default 16 each).
	MaxProcesses int `yaml:"max_processes"`
	MaxSessions  int `yaml:"max_sessions"`
	// Helper is the executable that supervises each command (default:
	// toold itself, re-executed in its helper mode).
	Helper string `yaml:"helper"`
	// HelperArgs are the helper's arguments (sandbox.Runner.Args); only
	// tests set them (sandbox.TestHelperArgs), never the file.
	HelperArgs []string `yaml:"-"`
	// Supervision is how commands' process trees are supervised: "auto"
	// (default) runs each unconfined command in a cgroup of its own when
	// the kernel and toold's privileges allow it, and under a helper
	// otherwise; "helper" always uses a helper.
	Supervision string `yaml:"supervision"`
	// Survive says what happens to background processes and terminal
	// sessions when toold exits (docs/terminal.md, "What survives a
	// restart"): "stop" (default) stops them at an ordinary shutdown
	// (SIGTERM, Ctrl-C) — they survive only toold's death (SIGKILL, a
	// crash) — and "keep" keeps them at a shutdown too (a rolling upgrade
	// on the same state directory). Either way the next toold on the
	// state directory adopts what runs.
	Survive string `yaml:"survive"`
	// OrphanTimeout is how long a background process or session runs on
	// with no toold to adopt it before it is stopped (default 1h).
	OrphanTimeout Duration `yaml:"orphan_timeout"`
}

// ManagerConfig returns the terminal manager's configuration for these
// settings over the workspace ws.
func (t Terminal) ManagerConfig(ws *workspace.Workspace, limits tools.Limits, log *slog.Logger) (terminal.Config, error) {
	c := terminal.Config{
		Workspace:     ws,
		Shell:         t.Shell,
		SessionArgs:   t.SessionArgs,
		PassEnv:       t.PassEnv,
		Env:           t.Env,
		Runner:        sandbox.Runner{Helper: t.Helper, Args: t.HelperArgs},
		Supervision:   t.Supervision,
		KillGrace:     time.Duration(t.KillGrace),
		Dir:           t.Dir,
		KeepPerCall:   t.KeepPerCall,
		KeepTotal:     t.KeepTotal,
		KeepCount:     t.KeepCount,
		KeepAge:       time.Duration(t.KeepAge),
		SessionBuffer: t.SessionBuffer,
		OrphanTimeout: time.Duration(t.OrphanTimeout),
		MaxProcesses:  t.MaxProcesses,
		MaxSessions:   t.MaxSessions,
		Limits:        limits,
		Logger:        log,
	}
	switch t.Survive {
	case "", "stop":
	case "keep":
		c.KeepOnShutdown = true
	default:
		return c, fmt.Errorf("terminal: survive %q: want stop or keep", t.Survive)
	}
	noNet := t.Network.Off
	switch t.Sandbox {
	case "off":
		if noNet || len(t.Writable) > 0 || len(t.Hide) > 0 {
			return c, fmt.Errorf("terminal: network: false, writable and hide apply to the sandbox, which is off")
		}
	case "", "auto", "landlock", "require":
		// Without isolation (network: true), Landlock's TCP rule is what
		// network: false means.
		c.Sandbox = &sandbox.Policy{
			Writable: t.Writable, Hide: t.Hide, NoNetwork: noNet,
			Isolate: !t.Network.Direct, Pids: t.PidsMax, Memory: t.MemoryMax,
		}
		c.RequireSandbox = t.Sandbox == "require"
	default:
		return c, fmt.Errorf("terminal.sandbox %q: want auto, require or off", t.Sandbox)
	}
	return c, nil
}

// Sandboxed reports whether commands run in a sandbox (terminal.sandbox
// is not off).
func (t Terminal) Sandboxed() bool { return t.Sandbox != "off" }

// EgressProxy reports whether toold starts its egress proxy for commands:
// network: proxy, or the sandbox's default network.
func (t Terminal) EgressProxy() bool {
	return t.Network.Proxy || (t.Sandboxed() && !t.Network.Off && !t.Network.Direct)
}
