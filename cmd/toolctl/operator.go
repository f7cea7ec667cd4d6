package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/metadata"
)

// Metadata keys of the credentials toold's read-side services check
// (pkg/service: OperatorMetadata, SecretMetadata).
const (
	operatorMetadata = "toold-operator"
	secretMetadata   = "toold-conversation-secret"
)

// operatorKeyPath returns where toold keeps the operator credential:
// $TOOLD_OPERATOR_KEY (a file), else operator.key in toold's state
// directory ($TOOLD_STATE_DIR, else toold's default: $XDG_STATE_HOME/toold
// or ~/.local/state/toold); "" when there is none to look at.
func (a *app) operatorKeyPath() string {
	if p := a.getenv("TOOLD_OPERATOR_KEY"); p != "" {
		return p
	}
	dir := a.getenv("TOOLD_STATE_DIR")
	switch {
	case dir != "":
	case filepath.IsAbs(a.getenv("XDG_STATE_HOME")):
		dir = filepath.Join(a.getenv("XDG_STATE_HOME"), "toold")
	case filepath.IsAbs(a.getenv("HOME")):
		dir = filepath.Join(a.getenv("HOME"), ".local", "state", "toold")
	default:
		return ""
	}
	return filepath.Join(dir, "operator.key")
}

// operatorKeyPathOr names the operator credential's file for messages.
func (a *app) operatorKeyPathOr() string {
	if p := a.operatorKeyPath(); p != "" {
		return p
	}
	return "operator.key in toold's state directory"
}

// operatorCredential returns the operator credential when toolctl can read
// it and may send it: the file is private to its owner (a file others can
// read is not a credential), and toolctl talks to a toold on this host —
// the unix socket, or a loopback address — unless $TOOLD_OPERATOR_KEY
// names the file explicitly. "" otherwise: toolctl then sees what the
// conversation secrets it holds allow.
func (a *app) operatorCredential() string {
	path := a.operatorKeyPath()
	if path == "" {
		return ""
	}
	if a.addr != "" && a.getenv("TOOLD_OPERATOR_KEY") == "" && !loopbackAddr(a.addr) {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// loopbackAddr reports whether HOST:PORT names this host.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// operatorToken sends the operator credential on every RPC.
type operatorToken string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (t operatorToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{operatorMetadata: string(t)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (operatorToken) RequireTransportSecurity() bool { return false }

// withSecret presents conversation conv's secret (explicit, else
// $TOOLD_CONVERSATION_SECRET, else the stored one) on the RPCs of ctx, for
// the read-side services; ctx unchanged when none is known.
func (a *app) withSecret(ctx context.Context, conv, explicit string) context.Context {
	if s := a.conversationSecret(conv, explicit); s != "" {
		return metadata.AppendToOutgoingContext(ctx, secretMetadata, s)
	}
	return ctx
}
