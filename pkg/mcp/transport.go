package mcp

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/procgroup"
)

// inheritedEnv are the variables a stdio server gets from toold's
// environment, as the MCP SDKs' stdio clients pass them; the entry's env
// adds to them. Nothing else of toold's environment (its token, OTEL_*
// settings) reaches a server.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// terminateGrace is how long closing a stdio session waits for the server
// to exit after its stdin closed, before SIGTERM (and as long again before
// SIGKILL).
const terminateGrace = 2 * time.Second

// transport builds the SDK transport for the entry, expanding variables.
// For stdio it also returns the command, whose process group toold ends.
func (u *upstream) transport(limit *handshakeLimit) (sdk.Transport, *exec.Cmd, error) {
	c := u.cfg
	var x expander
	switch c.Transport() {
	case mcpconfig.Stdio:
		name := x.expand(c.Command)
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = x.expand(a)
		}
		env := make([]string, 0, len(inheritedEnv)+len(c.Env))
		for _, k := range inheritedEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			env = append(env, k+"="+x.expand(c.Env[k]))
		}
		dir := x.expand(c.Cwd)
		if err := x.err(); err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(name, args...)
		cmd.Env = env
		cmd.Dir = dir
		cmd.Stderr = &lineLogger{log: u.m.opts.Logger.With("mcp_server", u.name), max: 4096}
		// Its own process group, so ending it ends its children; and it dies
		// with toold.
		procgroup.Own(cmd, true)
		cmd.WaitDelay = terminateGrace
		return &stdioTransport{cmd: cmd, terminate: terminateGrace}, cmd, nil
	case mcpconfig.HTTP, mcpconfig.SSE:
		endpoint := x.expand(c.URL)
		h := http.Header{}
		for k, v := range c.Headers {
			h.Set(k, x.expand(v))
		}
		if err := x.err(); err != nil {
			return nil, nil, err
		}
		hc := u.m.opts.HTTPClient
		if len(h) > 0 {
			base := hc.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			cp := *hc
			cp.Transport = headerTransport{base: base, h: h}
			hc = &cp
		}
		if c.Transport() == mcpconfig.SSE {
			return &sdk.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil, nil
		}
		oh, err := u.oauthHandler(u.m.opts.HTTPClient, endpoint, limit)
		if err != nil {
			return nil, nil, err
		}
		return &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, OAuthHandler: oh}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", c.Type)
}

// headerTransport adds the entry's headers to every request.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

// RoundTrip implements http.RoundTripper.
func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// expander expands ${VAR} and ${VAR:-default} from toold's environment, as
// Claude Code does in .mcp.json; a variable that is unset and has no
// default is an error. $VAR without braces is left alone.
type expander struct {
	missing []string
}

func (x *expander) expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(expr, ":-")
		if v, ok := os.LookupEnv(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			x.missing = append(x.missing, name)
		}
		s = s[i+j+1:]
	}
}

func (x *expander) err() error {
	if len(x.missing) == 0 {
		return nil
	}
	return fmt.Errorf("environment variable %s is not set (and has no ${VAR:-default})", strings.Join(slices.Compact(x.missing), ", "))
}

// lineLogger logs each line a stdio server writes to stderr. A line longer
// than max is logged in pieces, so memory stays bounded.
type lineLogger struct {
	log *slog.Logger
	max int
	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer.
func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
	}
	for len(w.buf) > w.max {
		w.emit(w.buf[:w.max])
		w.buf = append(w.buf[:0], w.buf[w.max:]...)
	}
	return len(p), nil
}

func (w *lineLogger) emit(line []byte) {
	if s := strings.TrimRight(string(line), "\r"); s != "" {
		w.log.Info("MCP server stderr", "line", s)
	}
}
