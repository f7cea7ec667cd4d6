package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/soheilhy/cmux"
	"google.golang.org/grpc"

	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcpserver"
)

// mcpState is the daemon's MCP wiring: the client side (the Manager of
// external servers, whose tools join the registry) and the serving side
// (toold's tools over MCP, on stdio for `toold mcp` and at /mcp on the TCP
// listener when mcp.http is set).
type mcpState struct {
	manager  *mcp.Manager
	server   *mcpserver.Server
	http     *http.Server // nil unless /mcp is served
	token    string       // what /mcp requires: the token, or mcp.token's
	stopOnce sync.Once
	// mu guards server, which is built when first offered (mcp.http, or
	// toold mcp's ServeMCP; offerMCPTools): converting every tool's schema
	// for MCP is not worth a start-up that serves only gRPC.
	mu        sync.Mutex
	newServer func() *mcpserver.Server
}

// defaultMCPStartupWait bounds the wait for configured MCP servers at start.
const defaultMCPStartupWait = 15 * time.Second

// startMCP builds both MCP sides and connects the configured servers,
// waiting up to mcp.startup_wait for their first connection so the first
// tool listing includes their tools.
func (m *Main) startMCP(ctx context.Context) error {
	cfg := m.Config.MCP
	if cfg.HTTP && m.Config.Listen == "" {
		return errors.New("mcp.http serves /mcp on the TCP listener: set listen (--listen 127.0.0.1:PORT) too")
	}
	m.mcp.token = m.Config.Token
	if cfg.HTTP && m.mcp.token == "" {
		// /mcp always needs a token: without one, any local process or a
		// web page rebinding its name to 127.0.0.1 could run tools.
		path := filepath.Join(m.memory.stateDir, MCPTokenFile)
		tok, err := loadMCPToken(path)
		if err != nil {
			return fmt.Errorf("mcp.http without a token: the token for /mcp (%s): %w", path, err)
		}
		m.mcp.token = tok
		m.Logger.Info("/mcp needs \"Authorization: Bearer TOKEN\" with the token in "+path+" (no --token given)", "token_file", path)
	}
	servers, err := cfg.ResolveServers()
	if err != nil {
		return err
	}
	for name, s := range servers {
		if len(s.Ignored) > 0 {
			m.Logger.Info("MCP server entry: ignoring keys toold does not use", "mcp_server", name, "keys", s.Ignored)
		}
	}
	if _, err := m.registry.Dialect(m.MCPDialect); err != nil {
		return err
	}
	instructions := fmt.Sprintf("toold runs these tools in the workspace %s under its policy (approval mode %s). "+
		"Paths are relative to the workspace. A call the policy asks about is shown to the user for approval when this client supports elicitation.",
		m.ws.Dir(), m.mode)
	m.mcp.newServer = func() *mcpserver.Server {
		return mcpserver.New(mcpserver.Options{
			Dialect:      m.MCPDialect,
			Executor:     m.exec,
			Registry:     m.registry,
			Logger:       m.Logger.With("component", "mcp-server"),
			Version:      Version,
			Instructions: instructions,
		})
	}
	m.mcp.manager = mcp.NewManager(mcp.Options{
		Registry: m.registry,
		Logger:   m.Logger.With("component", "mcp-client"),
		Limits:   toolLimits(m.Config.Output),
		Version:  Version,
		OnChange: m.syncMCPTools,
		// OAuth tokens of HTTP servers: in the state directory, which
		// commands cannot read.
		TokenDir: mcpTokenDir(m.memory.stateDir),
	})
	wait := time.Duration(cfg.StartupWait)
	if wait <= 0 {
		wait = defaultMCPStartupWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := m.mcp.manager.Start(wctx, servers); err != nil {
		return err
	}
	if cfg.HTTP {
		m.offerMCPTools()
	}
	return nil
}

// offerMCPTools builds the MCP server (once), which lists the registry's
// tools, and keeps its tools in step from now on (syncMCPTools). It returns
// the server.
func (m *Main) offerMCPTools() *mcpserver.Server {
	m.mcp.mu.Lock()
	defer m.mcp.mu.Unlock()
	if m.mcp.server == nil {
		m.mcp.server = m.mcp.newServer()
	}
	return m.mcp.server
}

// syncMCPTools brings the MCP server's tools in step with the registry once
// it is offered (the MCP manager's OnChange).
func (m *Main) syncMCPTools() {
	m.mcp.mu.Lock()
	defer m.mcp.mu.Unlock()
	if m.mcp.server != nil {
		m.mcp.server.Sync()
	}
}

// shareTCP returns the listener gRPC serves on. With mcp.http it splits l
// with cmux: connections that open with the HTTP/2 preface (gRPC, h2c) go
// to gRPC, all others (HTTP/1.1) to an HTTP server offering /mcp. A
// connection must show its first bytes within sniffTimeout. Closing the
// returned listener (grpc.Server's Stop does) closes l, which ends both.
func (m *Main) shareTCP(l net.Listener) net.Listener {
	if !m.Config.MCP.HTTP {
		return l
	}
	mux := cmux.New(l)
	mux.SetReadTimeout(sniffTimeout)
	grpcL := mux.Match(cmux.HTTP2())
	httpL := mux.Match(cmux.Any())
	hmux := http.NewServeMux()
	hmux.Handle("/mcp", m.peers.http(m.offerMCPTools().HTTPHandler(m.mcp.token)))
	m.mcp.http = &http.Server{Handler: hmux, ReadHeaderTimeout: 10 * time.Second, ConnContext: m.peers.connContext}
	m.serveWG.Add(2)
	go func() {
		defer m.serveWG.Done()
		if err := mux.Serve(); err != nil && !listenerClosed(err) {
			m.Logger.Error("splitting the TCP listener failed", "addr", l.Addr().String(), "err", err)
		}
	}()
	go func() {
		defer m.serveWG.Done()
		if err := m.mcp.http.Serve(httpL); err != nil && !listenerClosed(err) {
			m.Logger.Error("serving /mcp failed", "addr", l.Addr().String(), "err", err)
		}
	}()
	return grpcL
}

// listenerClosed reports whether err is how a server's Serve ends when its
// listener was closed on purpose (shutdown): not an error to log. Behind
// cmux that is cmux's "mux: server closed" or "listener closed".
func listenerClosed(err error) bool {
	return errors.Is(err, grpc.ErrServerStopped) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, cmux.ErrListenerClosed) || errors.Is(err, cmux.ErrServerClosed)
}

// sniffTimeout bounds how long a TCP connection may take to send the bytes
// that tell gRPC from HTTP/1.1 when mcp.http shares the listener.
const sniffTimeout = 10 * time.Second

// stopMCP stops serving MCP over HTTP, ends the MCP sessions, and stops the
// external servers (ending their processes). It is safe to call more than
// once and before startMCP.
func (m *Main) stopMCP() {
	m.mcp.stopOnce.Do(func() {
		if m.mcp.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if m.mcp.http.Shutdown(ctx) != nil {
				_ = m.mcp.http.Close() // open SSE streams never go idle
			}
			cancel()
		}
		m.mcp.mu.Lock()
		srv := m.mcp.server
		m.mcp.mu.Unlock()
		if srv != nil {
			srv.Close()
		}
		if m.mcp.manager != nil {
			_ = m.mcp.manager.Close()
		}
	})
}

// MCP returns the manager of the external MCP servers (nil before Run).
func (m *Main) MCP() *mcp.Manager { return m.mcp.manager }

// SyncMCP brings the tools toold serves over MCP in step with Registry:
// a test that registers tools after Run calls it (MCP servers' changes
// are synced by toold itself). Before the MCP server is built (it is when
// first served) there is nothing to bring in step.
func (m *Main) SyncMCP() { m.syncMCPTools() }

// ServeMCP serves one MCP session over in and out (stdin and stdout for
// `toold mcp`) until the client closes in or ctx ends. Call it after Run;
// Close the Main afterwards. Nothing else may write to out.
func (m *Main) ServeMCP(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	if m.mcp.newServer == nil {
		return errors.New("ServeMCP before Run")
	}
	return m.offerMCPTools().ServeStdio(ctx, in, out)
}

// MCPTokenFile is the file in toold's state directory holding the token
// /mcp requires when toold has no token of its own (--token, token_file).
// The person's MCP hosts read it (`Authorization: Bearer $(cat FILE)`); a
// command toold runs cannot (the sandbox masks the state directory).
const MCPTokenFile = "mcp.token"

// loadMCPToken returns the token kept in path, creating it (32 random
// bytes, hex, a 0600 file) when it is missing. A file that is not a
// regular 0600 file of toold's user is replaced: its value may be known to
// others.
func loadMCPToken(path string) (string, error) {
	if fi, err := os.Lstat(path); err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 == 0 && (st == nil || int(st.Uid) == os.Getuid()) {
			if b, err := os.ReadFile(path); err == nil {
				if tok := strings.TrimSpace(string(b)); len(tok) >= 32 {
					return tok, nil
				}
			}
		}
		if err := os.Remove(path); err != nil {
			return "", err
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return tok, f.Close()
}

// mcpTokenDir is where the MCP client keeps OAuth tokens: STATE_DIR/mcp-oauth,
// or nowhere (memory only) without a state directory.
func mcpTokenDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, "mcp-oauth")
}
