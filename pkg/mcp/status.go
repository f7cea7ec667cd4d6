package mcp

import (
	"time"

	"github.com/toold/toold/pkg/mcp/mcpconfig"
)

// State is where a server's connection is in its life.
type State int

// States of a server.
const (
	// StateConnecting: a connection attempt is under way.
	StateConnecting State = iota + 1
	// StateConnected: the session is up and its tools are registered.
	StateConnected
	// StateBackoff: the last attempt failed or the connection was lost; the
	// next attempt starts at Status.NextAttempt. Tools from an earlier
	// connection stay registered; their calls end UNAVAILABLE meanwhile.
	StateBackoff
	// StateDisabled: the entry is disabled in the configuration.
	StateDisabled
	// StateStopped: the server was removed or toold is shutting down.
	StateStopped
	// StateAuthorizing: the server answered 401 and toold waits for a
	// person to authorize it at Status.AuthURL (OAuth).
	StateAuthorizing
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateBackoff:
		return "backoff"
	case StateDisabled:
		return "disabled"
	case StateStopped:
		return "stopped"
	case StateAuthorizing:
		return "authorizing"
	}
	return "unknown"
}

// Status is a snapshot of one server.
type Status struct {
	// Name is the server's name, the prefix of its tools' names.
	Name string
	// Config is the entry as configured (variables unexpanded).
	Config mcpconfig.Server
	// Transport is "stdio", "http" or "sse".
	Transport string
	State     State
	// Since is when State began.
	Since time.Time
	// Err is the last connection error, empty when none.
	Err string
	// AuthURL is the OAuth authorization URL a person opens while State is
	// StateAuthorizing; empty otherwise. It holds no secret (the PKCE
	// verifier stays in toold).
	AuthURL string
	// NextAttempt is when a server in StateBackoff reconnects.
	NextAttempt time.Time
	// Restarts counts reconnections after the first connection attempt.
	Restarts int
	// PID is the process id of a running stdio server, else 0.
	PID int
	// ServerName, ServerVersion and ProtocolVersion are what the server
	// announced in the handshake.
	ServerName, ServerVersion, ProtocolVersion string
	// Tools are the registry names of the server's registered tools, sorted.
	Tools []string
	// Refused are the server's tools toold did not register, with why.
	Refused []RefusedTool
}

// RefusedTool is a tool of a server that toold did not register.
type RefusedTool struct {
	// Name is the tool's name on the server.
	Name string
	// Reason says why ("it has no inputSchema").
	Reason string
}
