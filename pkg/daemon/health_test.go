package daemon_test

import (
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// The health-only listener (health_listen, for Kubernetes' gRPC probes)
// answers health and nothing else, reports NOT_SERVING while toold drains
// running calls, and is gone once toold has stopped.
func TestHealthOnlyListener(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.HealthListen = "127.0.0.1:0"
		c.ShutdownGrace = config.Duration(time.Minute)
		c.Token = "s3cret" // the probe needs none
	}))
	conn, err := grpc.NewClient(d.Main.HealthAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	check := func(service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return r.GetStatus(), err
	}
	for _, svc := range []string{"", "toold.v1.ToolService"} {
		if st, err := check(svc); err != nil || st != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v %v", svc, st, err)
		}
	}
	// No tool service there, with or without the token.
	ctx := context.Background()
	if _, err := pb.NewToolServiceClient(conn).ListTools(ctx, &pb.ListToolsRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("ListTools on the health listener: %v, want Unimplemented", err)
	}

	// Drain: a running call holds the shutdown; health says NOT_SERVING.
	st := &slowTool{started: make(chan struct{})}
	if err := d.Main.Registry().Register(st); err != nil {
		t.Fatal(err)
	}
	sctx, cancelStream := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "authorization", "bearer s3cret"))
	defer cancelStream()
	s, err := d.Client.ExecuteTool(sctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "s", Name: "slow"}}})
	<-st.started
	closed := make(chan error, 1)
	go func() { closed <- d.Main.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := check("")
		if err == nil && got == healthpb.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health while draining: %v %v, want NOT_SERVING", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancelStream() // the call ends; the shutdown completes
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := check(""); status.Code(err) != codes.Unavailable && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("health after stop: %v, want the listener gone", err)
	}
	if _, err := os.Stat(d.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// socket_mode 0660 lets the socket's group connect (an agent container with
// toold's volume group); nothing wider is accepted.
func TestSocketMode(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.SocketMode = "0660" }))
	fi, err := os.Stat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket mode = %v, want 0660", fi.Mode())
	}
	for _, bad := range []string{"0666", "0777", "0644", "rw", "0700"} {
		c := config.Default()
		c.SocketMode = bad
		if err := c.Validate(); err == nil {
			t.Errorf("socket_mode %q accepted", bad)
		}
	}
}
