// Package config holds toold's settings, read from an optional YAML file and
// overridden by command-line flags.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toold/toold/pkg/config/value"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
)

// Config is the daemon's configuration. The YAML keys are the field tags.
// Zero values take the defaults of Default.
type Config struct {
	// Socket is the unix socket path (default ./toold.sock). "-" disables it.
	Socket string `yaml:"socket"`
	// SocketMode is the socket's permission bits, "0600" (default: only
	// toold's user may connect) or "0660" (members of the socket's group
	// too: an agent container that shares a volume with toold and has its
	// group, see docs/deploy.md).
	SocketMode string `yaml:"socket_mode"`
	// HealthListen, when set, serves only gRPC health (grpc.health.v1) on
	// this TCP address, for Kubernetes' gRPC probes; no tool service is
	// reachable there. It reports NOT_SERVING once toold drains.
	HealthListen string `yaml:"health_listen"`
	// Listen is an optional TCP address ("127.0.0.1:7777"). A non-loopback
	// address requires a token.
	Listen string `yaml:"listen"`
	// Workspace is the directory tools work in (default: current directory).
	Workspace string `yaml:"workspace"`
	// Token, when set, is required as "authorization: bearer TOKEN" on every
	// RPC except health. TokenFile reads it from a file instead.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	// ApprovalMode is yolo, auto (default) or ask.
	ApprovalMode string `yaml:"approval_mode"`
	// PolicyFile is the policy (YAML or TOML, by extension; see
	// docs/policy.md). Empty means the built-in rules only.
	PolicyFile string `yaml:"policy_file"`
	// ReadRoots are directories outside the workspace that calls may read
	// in AUTO mode without asking (added to the policy's read_roots).
	ReadRoots []string `yaml:"read_roots"`
	// ApprovalTimeout ends a call that waits longer than this for a
	// person's approval or answer (APPROVAL_TIMEOUT); 0 (default) waits
	// until the call is canceled or its stream ends.
	ApprovalTimeout Duration `yaml:"approval_timeout"`
	// Timeouts of calls.
	Timeouts Timeouts `yaml:"timeouts"`
	// Limits on concurrency.
	Limits Limits `yaml:"limits"`
	// Output shapes results for the model.
	Output Output `yaml:"output"`
	// ShutdownGrace is how long running calls may finish on SIGTERM before
	// they are canceled (default 10s).
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// Keepalive is the idle interval after which a stream gets a Keepalive
	// event (default 15s; "-1s" disables).
	Keepalive Duration `yaml:"keepalive"`
	// Log configures logging.
	Log Log `yaml:"log"`
	// Source is the file the configuration was read from, if any; it is
	// protected like a secret (calls may not read or change it).
	Source string `yaml:"-"`
	// DebugAddr, when set, serves Go's pprof profiles over HTTP on this
	// loopback address ("127.0.0.1:6060") for diagnosing performance.
	DebugAddr string `yaml:"debug_addr"`
	// MCP configures the MCP servers toold uses and serving over MCP (see
	// mcp.go).
	MCP mcpconfig.Config `yaml:"mcp"`
	// Terminal configures shell commands, background processes and
	// terminal sessions, and their sandbox (see termconfig).
	Terminal Terminal `yaml:"terminal"`
	// Web configures web_fetch and web_search (see webconfig).
	Web Web `yaml:"web"`
	// VCS configures git and tasks (see web.go).
	VCS VCS `yaml:"vcs"`
	// Conversations bounds the conversations no stream is attached to.
	Conversations Conversations `yaml:"conversations"`
	// StateDir is where toold keeps what outlives a run (default
	// $XDG_STATE_HOME/toold; see StateDir in memory.go).
	StateDir string `yaml:"state_dir"`
	// Memory configures memory_operations' storage (see memconfig).
	Memory Memory `yaml:"memory"`
	// Hooks, History and Audit: see hookconfig, historyconfig and
	// auditconfig.
	Hooks   HooksConfig `yaml:"hooks"`
	History History     `yaml:"history"`
	Audit   Audit       `yaml:"audit"`
	// Checkpoints: see sections.go.
	Checkpoints Checkpoints `yaml:"checkpoints"`
}

// Conversations bounds the conversations no stream is attached to (their
// background processes, sessions, kept output and grants).
type Conversations struct {
	// IdleTTL is how long a conversation with no stream attached keeps
	// its state before toold reaps it (kills its background processes,
	// closes its sessions, deletes its kept output, revokes its grants and
	// forgets its secret). Default 10m.
	IdleTTL Duration `yaml:"idle_ttl"`
	// MaxIdle is how many such conversations may keep state at once;
	// beyond it, the one idle the longest is reaped at once. Default 64.
	MaxIdle int `yaml:"max_idle"`
	// ResumeGrace is how long the calls of a stream that ended without
	// closing its side (the connection broke) keep running, their events
	// logged and their approvals pending, for a new stream to resume them
	// (Hello.resume_after_seq). Default 1m; "-1s" ends them at once
	// (DISCONNECTED).
	ResumeGrace Duration `yaml:"resume_grace"`
	// TailEvents and TailBytes bound the events a stream's log keeps after
	// sending them, for a stream that resumes after a drop to read again
	// what was in flight. Defaults 4096 events, 4 MiB.
	TailEvents int `yaml:"tail_events"`
	TailBytes  int `yaml:"tail_bytes"`
}

// Timeouts of calls.
type Timeouts struct {
	// Default applies when a call asks for none (default 2m).
	Default Duration `yaml:"default"`
	// Max caps what a call may ask for (default 30m).
	Max Duration `yaml:"max"`
}

// Limits on concurrency.
type Limits struct {
	// CallsPerStream bounds concurrent calls on one stream (default 64).
	CallsPerStream int `yaml:"calls_per_stream"`
	// Calls bounds concurrent calls on the daemon (default 1024).
	Calls int `yaml:"calls"`
	// MessageBytes bounds one client message on a stream (default 4 MiB);
	// a larger one is refused on its own (MessageRejected, or that call's
	// ToolCallEnd) and the stream goes on.
	MessageBytes int `yaml:"message_bytes"`
}

// Output shapes results for the model; the daemon passes it on as
// tools.Limits (zero values take tools.Limits' defaults).
type Output struct {
	ReadBytes     int `yaml:"read_bytes"`
	ReadLines     int `yaml:"read_lines"`
	LineChars     int `yaml:"line_chars"`
	ListItems     int `yaml:"list_items"`
	SearchMatches int `yaml:"search_matches"`
	OutputBytes   int `yaml:"output_bytes"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level"`
	// Format is text (default) or json.
	Format string `yaml:"format"`
}

// Duration is a time.Duration written as "30s" (see value.Duration).
type Duration = value.Duration

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Socket:        "./toold.sock",
		Workspace:     ".",
		ApprovalMode:  "auto",
		Timeouts:      Timeouts{Default: Duration(2 * time.Minute), Max: Duration(30 * time.Minute)},
		Limits:        Limits{CallsPerStream: 64, Calls: 1024},
		ShutdownGrace: Duration(10 * time.Second),
		Keepalive:     Duration(15 * time.Second),
		Log:           Log{Level: "info", Format: "text"},
	}
}

// Load reads a YAML file over the defaults. Unknown keys are errors, so a
// typo does not silently leave a setting at its default.
func Load(path string) (Config, error) {
	c := Default()
	c.Source = path
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("%s: %w", path, explainDecode(err))
	}
	return c, nil
}

// Validate checks the configuration and resolves the token file.
func (c *Config) Validate() error {
	if err := validMode(c.ApprovalMode); err != nil {
		return err
	}
	if c.Socket == "" && c.Listen == "" {
		return errors.New("nothing to listen on: set socket or listen")
	}
	if err := c.Checkpoints.Validate(); err != nil {
		return err
	}
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return fmt.Errorf("token_file: %w", err)
		}
		c.Token = string(bytes.TrimSpace(b))
		if c.Token == "" {
			return fmt.Errorf("token_file %s is empty", c.TokenFile)
		}
	}
	if c.Listen != "" {
		host, _, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return fmt.Errorf("listen %q: %w", c.Listen, err)
		}
		ip := net.ParseIP(host)
		loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
		if !loopback && c.Token == "" {
			return fmt.Errorf("listen %q is not a loopback address: set a token (--token or token_file) so that only your agents can run tools", c.Listen)
		}
	}
	if c.DebugAddr != "" {
		host, _, err := net.SplitHostPort(c.DebugAddr)
		ip := net.ParseIP(host)
		if err != nil || !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
			return fmt.Errorf("debug_addr %q must be a loopback address (profiles reveal internals)", c.DebugAddr)
		}
	}
	if _, err := c.SocketPerm(); err != nil {
		return err
	}
	if c.HealthListen != "" {
		if _, _, err := net.SplitHostPort(c.HealthListen); err != nil {
			return fmt.Errorf("health_listen %q: %w", c.HealthListen, err)
		}
	}
	if c.Timeouts.Max > 0 && c.Timeouts.Default > c.Timeouts.Max {
		return fmt.Errorf("timeouts.default %s exceeds timeouts.max %s", time.Duration(c.Timeouts.Default), time.Duration(c.Timeouts.Max))
	}
	switch {
	case c.Limits.MessageBytes < 0 || c.Limits.MessageBytes > 1<<30:
		return fmt.Errorf("limits.message_bytes %d: want 0 (the default, 4 MiB) to 1 GiB", c.Limits.MessageBytes)
	case c.Conversations.IdleTTL < 0:
		return fmt.Errorf("conversations.idle_ttl %s: want a positive duration (0: the default, 10m)", time.Duration(c.Conversations.IdleTTL))
	case c.Conversations.MaxIdle < 0:
		return fmt.Errorf("conversations.max_idle %d: want a positive number (0: the default, 64)", c.Conversations.MaxIdle)
	case c.Conversations.TailEvents < 0 || c.Conversations.TailBytes < 0:
		return fmt.Errorf("conversations.tail_events %d, tail_bytes %d: want positive numbers (0: the defaults, 4096 and 4 MiB)", c.Conversations.TailEvents, c.Conversations.TailBytes)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		return fmt.Errorf("log.format %q: want text or json", c.Log.Format)
	}
	for _, v := range []interface{ Validate() error }{c.Terminal, c.Web, c.Memory, c.Audit, c.History, c.Hooks} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return c.validateAcross()
}

// validMode checks approval_mode: yolo, auto (or empty) or ask, in any
// case — the names authz.ParseMode reads (TestApprovalModes holds them to
// it), checked here without linking the policy engine.
func validMode(s string) error {
	switch strings.ToLower(s) {
	case "yolo", "auto", "", "ask":
		return nil
	}
	return fmt.Errorf("unknown approval mode %q (want yolo, auto or ask)", s)
}

// SocketPerm returns the permission bits of the unix socket: 0600 unless
// SocketMode says 0660. Any other mode is an error: a socket others can
// connect to would let any local user run tools.
func (c *Config) SocketPerm() (os.FileMode, error) {
	switch c.SocketMode {
	case "", "0600", "600":
		return 0o600, nil
	case "0660", "660":
		return 0o660, nil
	}
	return 0, fmt.Errorf("socket_mode %q: want 0600 (toold's user only) or 0660 (and the socket's group); a socket others may connect to would let any local user run tools", c.SocketMode)
}
