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
func (m *Main) serveDebug(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if ms := m.observe.metricsSetup; ms != nil {
		mux.Handle("/metrics", ms.Prometheus)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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
