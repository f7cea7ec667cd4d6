// Package termconfig is the terminal plugin's configuration section
// ("terminal:" in toold's YAML: shell commands, background processes,
// sessions and their sandbox). It is owned by pkg/tools/terminal and imports
// nothing of toold's but the value types every section uses, so pkg/config
// and toolctl do not link the terminal, the sandbox or the shell reader.
// The daemon's wiring turns a Terminal into the manager's terminal.Config.
package termconfig

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toold/toold/pkg/config/value"
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
//	  git_writable: false      # commands may write the workspace's .git
//	  secret_guard: true       # refuse running commands the secrets that appear meanwhile
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
	// GitWritable lets sandboxed commands write the workspace's git
	// directories (default false: read-only in every command's view, and
	// git commands that write fail; toold's version-control tool commits).
	// The risk: a person's own git, outside any sandbox, runs what a
	// repository's config and hooks name, so a command could plant a
	// program (core.fsmonitor, a hook, a filter) that the person's next
	// git status runs. See docs/policy.md.
	GitWritable bool `yaml:"git_writable"`
	// SecretGuard (default true, where the machine allows it: fanotify's
	// permission events, CAP_SYS_ADMIN) refuses running commands the
	// secrets that appear in the workspace or a home directory while they
	// run (sandbox.SecretGuard). false leaves such a secret masked only
	// for the commands that start after it: the choice of an operator who
	// will not have a host process's open of a new secret wait for toold
	// (it waits while toold is stopped). See docs/terminal.md.
	SecretGuard *bool `yaml:"secret_guard"`
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
	KillGrace value.Duration `yaml:"kill_grace"`
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
	KeepCount int            `yaml:"keep_count"`
	KeepAge   value.Duration `yaml:"keep_age"`
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
	OrphanTimeout value.Duration `yaml:"orphan_timeout"`
}

// Sandboxed reports whether commands run in a sandbox (terminal.sandbox
// is not off).
func (t Terminal) Sandboxed() bool { return t.Sandbox != "off" }

// EgressProxy reports whether toold starts its egress proxy for commands:
// network: proxy, or the sandbox's default network.
func (t Terminal) EgressProxy() bool {
	return t.Network.Proxy || (t.Sandboxed() && !t.Network.Off && !t.Network.Direct)
}

// Validate checks the section on its own (the sandbox's layers are
// checked when the terminal starts).
func (t Terminal) Validate() error {
	switch t.Sandbox {
	case "off":
		if t.Network.Off || len(t.Writable) > 0 || len(t.Hide) > 0 || t.GitWritable || t.SecretGuard != nil && *t.SecretGuard {
			return fmt.Errorf("terminal: network: false, writable, hide, git_writable and secret_guard apply to the sandbox, which is off")
		}
	case "", "auto", "landlock", "require":
	default:
		return fmt.Errorf("terminal.sandbox %q: want auto, require or off", t.Sandbox)
	}
	switch {
	case t.KeepCount < 0:
		return fmt.Errorf("terminal.keep_count %d: want a positive number (0: the default, 1000)", t.KeepCount)
	case t.KeepAge < 0:
		return fmt.Errorf("terminal.keep_age %s: want a positive duration (0: the default, 1h)", time.Duration(t.KeepAge))
	case t.OrphanTimeout < 0:
		return fmt.Errorf("terminal.orphan_timeout %s: want a positive duration (0: the default, 1h)", time.Duration(t.OrphanTimeout))
	}
	switch t.Survive {
	case "", "stop", "keep":
	default:
		return fmt.Errorf("terminal.survive %q: want stop or keep", t.Survive)
	}
	return nil
}

// KeepOnShutdown reports whether background processes and sessions keep
// running at an ordinary shutdown (survive: keep).
func (t Terminal) KeepOnShutdown() bool { return t.Survive == "keep" }

// NetworkMode is terminal.network: proxy, false or true. proxy: commands
// get HTTP_PROXY / HTTPS_PROXY pointing at toold's egress proxy, which
// applies the policy's host rules and refuses private, loopback and
// metadata addresses; in the sandbox's network namespace it is the only
// thing reachable (the default with a sandbox). false: no network at all
// (sandbox only). true: the host's network, unconfined (the default
// without a sandbox).
type NetworkMode struct {
	// Off gives sandboxed commands no network.
	Off bool
	// Proxy routes commands through the egress proxy.
	Proxy bool
	// Direct (true) gives commands the host's network.
	Direct bool
}

// UnmarshalYAML accepts true, false or "proxy".
func (n *NetworkMode) UnmarshalYAML(v *yaml.Node) error {
	var b bool
	if err := v.Decode(&b); err == nil {
		*n = NetworkMode{Off: !b, Direct: b}
		return nil
	}
	var s string
	if err := v.Decode(&s); err == nil && s == "proxy" {
		*n = NetworkMode{Proxy: true}
		return nil
	}
	return fmt.Errorf("terminal.network: want true, false or proxy, not %q", v.Value)
}

// MarshalYAML writes the mode back as true, false or proxy.
func (n NetworkMode) MarshalYAML() (any, error) {
	switch {
	case n.Proxy:
		return "proxy", nil
	case n.Off:
		return false, nil
	case n.Direct:
		return true, nil
	}
	return nil, nil
}
