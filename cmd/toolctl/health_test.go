package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// tempSocket returns a path for a unix socket in a new short temp dir (the
// path limit is 108 bytes, which t.TempDir can exceed).
func tempSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toolctl-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

// serve runs a real gRPC server with the services register adds on a temp
// unix socket until the test ends, and returns the socket's path.
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	path := tempSocket(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return path
}

func TestHealth(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Listen = "127.0.0.1:0" }))

	// Real health servers in other states than toold's.
	withStatus := func(svc string, st healthpb.HealthCheckResponse_ServingStatus) string {
		return serve(t, func(s *grpc.Server) {
			h := health.NewServer()
			if svc != "" {
				h.SetServingStatus(svc, st)
			}
			healthpb.RegisterHealthServer(s, h)
		})
	}
	notServing := withStatus(pb.ToolService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	noToolService := withStatus("", 0)

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"socket", []string{"--socket", d.Socket}, exitOK, "SERVING\nsandbox: ", nil},
		{"tcp", []string{"--addr", d.Main.TCPAddr()}, exitOK, "SERVING\nsandbox: ", nil},
		{"service not serving", []string{"--socket", notServing}, exitFailure, "NOT_SERVING\n",
			[]string{"not serving: toold.v1.ToolService: NOT_SERVING"}},
		{"no ToolService", []string{"--socket", noToolService}, exitFailure, "SERVICE_UNKNOWN\n",
			[]string{"toold.v1.ToolService: SERVICE_UNKNOWN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := cli{}.run(t, append(tt.args, "health")...)
			r.check(t, tt.code, nil, tt.stderr)
			if r.stdout != tt.stdout && (tt.code != exitOK || !strings.HasPrefix(r.stdout, tt.stdout)) {
				t.Errorf("stdout %q, want %q", r.stdout, tt.stdout)
			}
			if tt.code == exitOK {
				for _, layer := range []string{"writes", "reads", "network", "control_plane", "resources"} {
					if !strings.Contains(r.stdout, "sandbox: "+layer+" ") {
						t.Errorf("stdout %q does not report the sandbox's %s layer", r.stdout, layer)
					}
				}
			}
		})
	}
}
