package daemon

import (
	"errors"
	"net"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// serveHealth serves the daemon's health service, and nothing else, on the
// TCP address addr (config health_listen): Kubernetes' gRPC probes reach it
// on the pod's network while the tool service stays on the unix socket.
// It answers with the same statuses as the main listeners, so it reports
// NOT_SERVING from the moment toold starts draining; it stops last, in
// stopHealth.
func (m *Main) serveHealth(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, m.health)
	m.healthSrv, m.healthAddr = srv, l.Addr().String()
	m.serveWG.Add(1)
	go func() {
		defer m.serveWG.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.Logger.Error("serve failed", "addr", l.Addr().String(), "err", err)
		}
	}()
	return nil
}

// HealthAddr returns the address of the health-only listener, or "".
func (m *Main) HealthAddr() string { return m.healthAddr }

// stopHealth stops the health-only listener (its Watch streams end).
func (m *Main) stopHealth() {
	if m.healthSrv != nil {
		m.healthSrv.Stop()
	}
}
