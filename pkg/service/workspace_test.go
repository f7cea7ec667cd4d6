package service_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/workspace"
)

// Watches beyond the cap are RESOURCE_EXHAUSTED; ending one makes room.
func TestWatchCap(t *testing.T) {
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	s := grpc.NewServer()
	pb.RegisterWorkspaceServiceServer(s, service.NewWorkspaceServerMax(ws, nil, nil, service.NewAccess("op", nil), 2))
	dir, err := os.MkdirTemp("", "ws-test")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Stop()
	conn, err := grpc.NewClient("unix://"+l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := pb.NewWorkspaceServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op := metadata.AppendToOutgoingContext(ctx, service.OperatorMetadata, "op")
	watch := func(ctx context.Context) (grpc.ServerStreamingClient[pb.WatchResponse], error) {
		st, err := cl.Watch(ctx, &pb.WatchRequest{})
		if err != nil {
			return nil, err
		}
		_, err = st.Recv()
		return st, err
	}
	c1, stop1 := context.WithCancel(op)
	if _, err := watch(c1); err != nil {
		t.Fatal(err)
	}
	if _, err := watch(op); err != nil {
		t.Fatal(err)
	}
	if _, err := watch(op); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third watch: %v, want RESOURCE_EXHAUSTED", err)
	}
	stop1()
	var err3 error
	testenv.Poll(t, 30*time.Second, "room for a watch once one ended", func() bool {
		_, err3 = watch(op)
		return status.Code(err3) != codes.ResourceExhausted
	})
	if err3 != nil {
		t.Fatalf("after ending one: %v", err3)
	}
}
