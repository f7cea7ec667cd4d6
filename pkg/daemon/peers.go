package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/toold/toold/pkg/audit"
	"github.com/toold/toold/pkg/peercred"
	"github.com/toold/toold/pkg/sandbox"
)

// peerGuard keeps toold's control plane out of reach of the commands toold
// runs (issue 25 item 4): every connection on every listener — the unix
// socket, TCP (gRPC and the /mcp endpoint sharing it), the debug listener
// — is identified once, when it is accepted, by the kernel's view of its
// client (pkg/peercred), and a client that is one of toold's commands'
// processes is refused: gRPC calls with PERMISSION_DENIED (the first RPC
// of the connection, every RPC after it), HTTP with 403. The refusal is
// logged and audited once per connection.
//
// On loopback TCP the client's process is found through /proc. A loopback
// client toold cannot attribute to a process (one in another pid
// namespace, another user's, or an end passed away in flight) is accepted
// only when toold requires a token (the auth interceptor then checks it):
// without a token it is refused, since nothing then tells it from a
// command. Clients on other hosts are not toold's commands; the token
// decides for them as before.
type peerGuard struct {
	check    *peercred.Checker
	tokenSet bool
	m        *Main
}

// newPeerGuard builds the guard for this process.
func (m *Main) newPeerGuard() *peerGuard {
	own := peercred.OwnCgroup()
	term := m.terminal
	return &peerGuard{
		m:        m,
		tokenSet: m.Config.Token != "",
		check: &peercred.Checker{
			Self:            os.Getpid(),
			ReapsOrphans:    peercred.OrphansReparented(),
			AnyTooldCommand: sandbox.CommandOfAnyToold,
			CommandCgroups: func() []string {
				if term == nil || own == "" {
					return nil
				}
				dir := term.CgroupDir()
				if dir == "" {
					return nil
				}
				// Commands' cgroups are directories below toold's own.
				return []string{path.Join(own, filepath.Base(dir))}
			},
		},
	}
}

// identify judges the client of c; it returns why it is refused, or "".
// A refusal is logged and audited here.
func (g *peerGuard) identify(c net.Conn) string {
	why := g.refusal(c)
	if why != "" {
		g.m.Logger.Warn("refused a client: it is one of toold's own commands, or cannot be told from one",
			"listener", c.LocalAddr().String(), "client", c.RemoteAddr().String(), "reason", why)
		if a := g.m.observe.audit; a != nil {
			if _, err := a.Append(audit.Record{Kind: audit.KindPeerRefused, Decision: "deny", Rule: "control-plane", Detail: why}); err != nil {
				g.m.Logger.Error("audit log append failed", "kind", audit.KindPeerRefused, "err", err)
			}
		}
	}
	return why
}

func (g *peerGuard) refusal(c net.Conn) string {
	switch c.LocalAddr().Network() {
	case "unix":
		uc, ok := c.(*net.UnixConn)
		if !ok {
			return "toold cannot read the credentials of this unix socket's client"
		}
		pid, _, err := peercred.UnixPeer(uc)
		if err != nil {
			return "toold cannot read the credentials of this unix socket's client: " + err.Error()
		}
		if pid == 0 {
			// The kernel gives pid 0 for a peer outside toold's pid
			// namespace (an agent in another container sharing the
			// socket's volume, or the host looking into toold's
			// container). Every process toold starts, and everything
			// they start — in the sandbox's own pid namespaces too — is
			// in toold's namespace or below it and has a pid here: such
			// a peer is not one of toold's commands.
			return ""
		}
		return g.judge(pid)
	case "tcp":
		if !peercred.Loopback(c.RemoteAddr()) {
			return ""
		}
		// A process that forks holds its parent's descriptors until its
		// exec closes them: a client whose process forks a helper as it
		// connects (toold's own tests, where the client and toold are one
		// process) briefly shares its end with a process that is not the
		// client. A refusal must hold on a second look: a command's process
		// that is the client still holds its end then.
		why := g.tcpRefusal(c)
		for i := 0; why != "" && i < 3; i++ {
			time.Sleep(20 * time.Millisecond)
			why = g.tcpRefusal(c)
		}
		return why
	}
	return "toold cannot identify clients of a " + c.LocalAddr().Network() + " listener"
}

// tcpRefusal judges the processes holding a loopback TCP client's end.
func (g *peerGuard) tcpRefusal(c net.Conn) string {
	pids, err := g.check.TCPPeers(c.LocalAddr(), c.RemoteAddr())
	if err != nil {
		return "toold cannot find this loopback client's process: " + err.Error()
	}
	known := 0
	for _, pid := range pids {
		v, err := g.check.Check(pid)
		if err != nil {
			continue // it exited meanwhile; another holder decides
		}
		known++
		if v.Command {
			return v.Reason
		}
	}
	if known == 0 && !g.tokenSet {
		return "toold cannot attribute this loopback TCP client to a process it can inspect, and runs without a token: " +
			"connect over the unix socket, or run toold with --token"
	}
	return ""
}

func (g *peerGuard) judge(pid int) string {
	v, err := g.check.Check(pid)
	if err != nil {
		return err.Error()
	}
	if v.Command {
		return v.Reason
	}
	return ""
}

// refusedMessage is what a refused client is told.
func refusedMessage(why string) string {
	return "toold refuses this client: " + why + " — the processes of the commands toold runs may not reach toold itself (its control plane)"
}

// peerInfo is the AuthInfo of a connection: what the guard found at accept.
type peerInfo struct {
	credentials.CommonAuthInfo
	refused string // why the client is refused; "" when it is not
}

// AuthType implements credentials.AuthInfo.
func (peerInfo) AuthType() string { return "toold-peer" }

// peerCreds are insecure transport credentials (toold speaks plaintext on
// its unix socket and TCP, as before) that identify each connection's
// client during the handshake.
type peerCreds struct {
	credentials.TransportCredentials
	g *peerGuard
}

// ServerHandshake implements credentials.TransportCredentials.
func (p peerCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c, peerInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, refused: p.g.identify(c)}, nil
}

// Clone implements credentials.TransportCredentials.
func (p peerCreds) Clone() credentials.TransportCredentials {
	return peerCreds{TransportCredentials: p.TransportCredentials.Clone(), g: p.g}
}

// serverOption returns the grpc.Creds option that identifies clients.
func (g *peerGuard) serverOption() grpc.ServerOption {
	return grpc.Creds(peerCreds{TransportCredentials: insecure.NewCredentials(), g: g})
}

// errUnidentified refuses an RPC that came over a connection the guard did
// not see (it cannot happen with serverOption set; fail closed if it does).
var errUnidentified = status.Error(codes.PermissionDenied, refusedMessage("toold did not identify this connection's client"))

func (g *peerGuard) allowed(ctx context.Context) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return errUnidentified
	}
	pi, ok := p.AuthInfo.(peerInfo)
	if !ok {
		return errUnidentified
	}
	if pi.refused != "" {
		return status.Error(codes.PermissionDenied, refusedMessage(pi.refused))
	}
	return nil
}

// unary refuses RPCs of refused clients.
func (g *peerGuard) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := g.allowed(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// stream refuses streams of refused clients.
func (g *peerGuard) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := g.allowed(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// peerKey is the context key of an HTTP connection's refusal.
type peerKey struct{}

// connContext is an http.Server's ConnContext: it identifies the client.
func (g *peerGuard) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, g.identify(c))
}

// http refuses requests of refused clients with 403 and the reason.
func (g *peerGuard) http(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		why, ok := r.Context().Value(peerKey{}).(string)
		if !ok {
			why = "toold did not identify this connection's client"
		}
		if why != "" {
			http.Error(w, refusedMessage(why), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// redactedArgs returns args with the values of secret-bearing flags
// (--token and the like) replaced, for /debug/pprof/cmdline.
func redactedArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	secret := func(flag string) bool {
		name := strings.ToLower(strings.TrimLeft(flag, "-"))
		for _, s := range []string{"token", "secret", "password", "key", "credential"} {
			if strings.Contains(name, s) {
				return true
			}
		}
		return false
	}
	for i := 1; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if name, _, ok := strings.Cut(a, "="); ok {
			if secret(name) {
				out[i] = name + "=REDACTED"
			}
			continue
		}
		if secret(a) && i+1 < len(out) {
			out[i+1] = "REDACTED"
			i++
		}
	}
	return out
}

// cmdline serves the redacted command line as net/http/pprof's Cmdline
// does (arguments separated by NUL bytes).
func cmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(redactedArgs(os.Args), "\x00"))
}

// selfAddrs are toold's own TCP listening addresses (gRPC and /mcp, debug,
// health), set once they are open.
type selfAddrs struct {
	addrs atomic.Pointer[[]netip.AddrPort]
}

// set records the addresses being listened on.
func (s *selfAddrs) set(addrs []string) {
	var aps []netip.AddrPort
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			aps = append(aps, ap)
		}
	}
	s.addrs.Store(&aps)
}

// refuse reports whether ap reaches one of toold's listeners: the same
// address and port, or the port of a listener on every address (0.0.0.0,
// ::) at a loopback address or one of this host's. netguard refuses such
// addresses for web_fetch and the egress proxy, whatever the host rules
// allow: a connection toold made for a model would otherwise come from
// toold itself, which the peer check accepts.
func (s *selfAddrs) refuse(ap netip.AddrPort) bool {
	p := s.addrs.Load()
	if p == nil {
		return false
	}
	ip := ap.Addr().WithZone("").Unmap()
	for _, l := range *p {
		if l.Port() != ap.Port() {
			continue
		}
		lip := l.Addr().WithZone("").Unmap()
		if lip == ip {
			return true
		}
		if lip.IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified() || localAddr(ip)) {
			return true
		}
	}
	return false
}

// localAddr reports whether ip is one of this host's interface addresses.
func localAddr(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: refuse
	}
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil && pfx.Addr().Unmap() == ip {
			return true
		}
	}
	return false
}
