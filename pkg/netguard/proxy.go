package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"
)

// Judge decides whether commands may reach host (lowercase, no port). A
// non-nil error denies, and its text is what the command prints.
type Judge func(ctx context.Context, host string) error

// Proxy is toold's egress proxy for commands: an HTTP proxy (plain
// requests and CONNECT tunnels) on loopback that applies the policy's host
// rules (Judge) and the Guard to every connection a command makes through
// it. Commands find it in HTTP_PROXY / HTTPS_PROXY. A denied request gets
// 403 with the reason and how to ask for the host.
type Proxy struct {
	// Guard refuses private and metadata addresses (nil: a zero Guard).
	Guard *Guard
	// Judge applies the host rules; nil allows every host the guard lets
	// through.
	Judge Judge
	// Logger receives one line per denied request.
	Logger *slog.Logger

	srv    *http.Server
	ln     net.Listener
	rp     *httputil.ReverseProxy
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// Start listens on addr (for example "127.0.0.1:0") and serves until
// Close.
func (p *Proxy) Start(addr string) error {
	if p.Guard == nil {
		p.Guard = &Guard{}
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.ln = ln
	p.conns = map[net.Conn]struct{}{}
	tr := &http.Transport{
		DialContext:           p.Guard.DialContext,
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Transport: tr,
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL; r.Out.Host = r.In.Host },
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.refuse(w, r.URL.Hostname(), err)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(ln)
	}()
	return nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's URL for HTTP_PROXY.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Env returns the variables that send a command's HTTP(S) traffic through
// the proxy (both spellings; NO_PROXY emptied so nothing bypasses it).
func (p *Proxy) Env() map[string]string {
	u := p.URL()
	return map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "http_proxy": u, "https_proxy": u,
		"ALL_PROXY": u, "all_proxy": u, "NO_PROXY": "", "no_proxy": "",
	}
}

// Close stops the proxy and every tunnel it holds.
func (p *Proxy) Close() error {
	if p.srv == nil {
		return nil
	}
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	p.wg.Wait()
	return err
}

// hold registers a tunnel's connections so Close can end it; false when
// the proxy is closing (the connections are closed then).
func (p *Proxy) hold(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	p.wg.Add(1)
	return true
}

func (p *Proxy) release(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Done()
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := strings.TrimSuffix(strings.ToLower(r.URL.Hostname()), ".")
	if r.Method == http.MethodConnect {
		host = strings.TrimSuffix(strings.ToLower(hostOnly(r.Host)), ".")
	}
	if host == "" {
		http.Error(w, "toold egress proxy: only proxy requests (absolute URLs or CONNECT) are served", http.StatusBadRequest)
		return
	}
	if p.Judge != nil {
		if err := p.Judge(r.Context(), host); err != nil {
			p.refuse(w, host, err)
			return
		}
	}
	if r.Method == http.MethodConnect {
		p.connect(w, r, host)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, "toold egress proxy: only http URLs are proxied as requests; https goes through CONNECT", http.StatusBadRequest)
		return
	}
	p.rp.ServeHTTP(w, r)
}

func hostOnly(hp string) string {
	if h, _, err := net.SplitHostPort(hp); err == nil {
		return h
	}
	return strings.Trim(hp, "[]")
}

// connect opens a tunnel to r.Host through the guard.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, host string) {
	addr := r.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "443")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := p.Guard.DialContext(ctx, "tcp", addr)
	cancel()
	if err != nil {
		p.refuse(w, host, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "toold egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.hold(up, down) {
		return
	}
	defer p.release(up, down)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	errc := make(chan error, 2)
	go func() {
		// Bytes the client sent after the CONNECT line, then the rest.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			if _, err := up.Write(b); err != nil {
				errc <- err
				return
			}
		}
		_, err := io.Copy(up, down)
		if tc, ok := up.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		errc <- err
	}()
	go func() {
		_, err := io.Copy(down, up)
		if tc, ok := down.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		errc <- err
	}()
	// Each direction half-closes the other side when its source ends; the
	// tunnel ends when both have, or when Close closes the connections.
	<-errc
	<-errc
}

// refuse answers 403 with the reason, written for the model reading the
// command's output.
func (p *Proxy) refuse(w http.ResponseWriter, host string, err error) {
	var be *BlockedError
	status := http.StatusForbidden
	msg := err.Error()
	switch {
	case errors.As(err, &be):
	case isDenied(err):
	default:
		status = http.StatusBadGateway
		msg = fmt.Sprintf("cannot reach %s: %v", host, err)
	}
	p.Logger.Info("egress proxy refused", "host", host, "status", status, "reason", msg)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Toold-Denied", "1")
	w.WriteHeader(status)
	if status == http.StatusForbidden {
		fmt.Fprintf(w, "toold egress proxy: %s\nTo reach %s, fetch a page of it with web_fetch (toold then asks the person), or ask the person to add a policy rule allowing hosts: [%s].\n", msg, host, host)
		return
	}
	fmt.Fprintf(w, "toold egress proxy: %s\n", msg)
}

// DeniedError is what a Judge returns to deny a host.
type DeniedError struct{ Msg string }

func (e *DeniedError) Error() string { return e.Msg }

func isDenied(err error) bool {
	var de *DeniedError
	return errors.As(err, &de)
}
