package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
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
	stopOnce sync.Once
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
	if cfg.HTTP && m.Config.Token == "" {
		return errors.New("mcp.http needs a token (--token or token_file): without one, any local process or a web page rebinding its name to 127.0.0.1 could run tools through /mcp")
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
	m.mcp.server = mcpserver.New(mcpserver.Options{
		Dialect:  m.MCPDialect,
		Executor: m.exec,
		Registry: m.registry,
		Logger:   m.Logger.With("component", "mcp-server"),
		Version:  Version,
		Instructions: fmt.Sprintf("toold runs these tools in the workspace %s under its policy (approval mode %s). "+
			"Paths are relative to the workspace. A call the policy asks about is shown to the user for approval when this client supports elicitation.",
			m.ws.Dir(), m.mode),
	})
	m.mcp.manager = mcp.NewManager(mcp.Options{
		Registry: m.registry,
		Logger:   m.Logger.With("component", "mcp-client"),
		Limits:   m.Config.Output.ToolLimits(),
		Version:  Version,
		OnChange: m.mcp.server.Sync,
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
	m.mcp.server.Sync()
	return nil
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
	hmux.Handle("/mcp", m.peers.http(m.mcp.server.HTTPHandler(m.Config.Token)))
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
		if m.mcp.server != nil {
			m.mcp.server.Close()
		}
		if m.mcp.manager != nil {
			_ = m.mcp.manager.Close()
		}
	})
}

// MCP returns the manager of the external MCP servers (nil before Run).
func (m *Main) MCP() *mcp.Manager { return m.mcp.manager }

// ServeMCP serves one MCP session over in and out (stdin and stdout for
// `toold mcp`) until the client closes in or ctx ends. Call it after Run;
// Close the Main afterwards. Nothing else may write to out.
func (m *Main) ServeMCP(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	if m.mcp.server == nil {
		return errors.New("ServeMCP before Run")
	}
	return m.mcp.server.ServeStdio(ctx, in, out)
}
