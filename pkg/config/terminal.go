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
//	  sandbox: landlock        # off (default), landlock or require
//	  network: false           # sandboxed commands get no TCP
//	  writable: [/home/me/.cache/go-build]
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
	// Sandbox is off (default); landlock, which confines every command and
	// session with Landlock (writes only in the workspace, toold's temp dir
	// and Writable; where the kernel lacks Landlock, toold says so at start
	// and runs them unconfined); or require, which refuses to start without
	// Landlock.
	Sandbox string `yaml:"sandbox"`
	// Network, when false, also refuses sandboxed commands TCP connect and
	// bind (default true).
	// "proxy" sends commands' HTTP(S) through toold's egress proxy (host
	// rules and the private-address guard; see network.go).
	Network NetworkMode `yaml:"network"`
	// Writable are more directories sandboxed commands may write in.
	Writable []string `yaml:"writable"`
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
		MaxProcesses:  t.MaxProcesses,
		MaxSessions:   t.MaxSessions,
		Limits:        limits,
		Logger:        log,
	}
	noNet := t.Network.Off
	switch t.Sandbox {
	case "", "off":
		if noNet || len(t.Writable) > 0 {
			return c, fmt.Errorf("terminal: network and writable apply to the sandbox; set sandbox: landlock (or require)")
		}
	case "landlock":
		c.Sandbox = &sandbox.Policy{Writable: t.Writable, NoNetwork: noNet}
	case "require":
		c.Sandbox = &sandbox.Policy{Writable: t.Writable, NoNetwork: noNet, Require: true}
	default:
		return c, fmt.Errorf("terminal.sandbox %q: want off, landlock or require", t.Sandbox)
	}
	return c, nil
}
