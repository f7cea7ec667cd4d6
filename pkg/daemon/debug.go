package daemon

import (
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's pprof profiles and the metrics as Prometheus text
// (/metrics) on a loopback address (checked by config.Validate) until Close.
// /debug/pprof/cmdline shows the command line with the values of --token
// and other secret-bearing flags redacted; clients that are toold's own
// commands are refused (403), as on every listener.
func (m *Main) serveDebug(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// The command line may carry --token: it is served redacted.
	mux.HandleFunc("/debug/pprof/cmdline", cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if ms := m.observe.metricsSetup; ms != nil {
		mux.Handle("/metrics", ms.Prometheus)
	}
	// Profiles show toold's memory and stacks: toold's own commands may
	// not read them (peers.go).
	srv := &http.Server{Handler: m.peers.http(mux), ReadHeaderTimeout: 5 * time.Second, ConnContext: m.peers.connContext}
	m.debug = srv
	m.observe.debugAddr = l.Addr().String()
	m.serveWG.Add(1)
	go func() {
		defer m.serveWG.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("debug server failed", "err", err)
		}
	}()
	m.Logger.Info("serving pprof and /metrics", "addr", l.Addr().String())
	return nil
}
