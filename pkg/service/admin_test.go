package service_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/tools"
)

// serveAdmin serves the AdminService over a real mcp.Manager on a unix
// socket and on loopback TCP, and returns clients for both.
func serveAdmin(t *testing.T, tokenRequired bool) (unix, tcp pb.AdminServiceClient, m *mcp.Manager) {
	t.Helper()
	m = mcp.NewManager(mcp.Options{Registry: tools.NewRegistry(), MinBackoff: time.Hour})
	t.Cleanup(func() { m.Close() })
	s := grpc.NewServer()
	pb.RegisterAdminServiceServer(s, service.NewAdmin(m, tokenRequired, service.NewAccess(testOperator, nil)))
	dir, err := os.MkdirTemp("", "admin-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ul, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ul)
	go s.Serve(tl)
	t.Cleanup(s.Stop)
	dial := func(target string) pb.AdminServiceClient {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return pb.NewAdminServiceClient(conn)
	}
	return dial("unix://" + ul.Addr().String()), dial("passthrough:///" + tl.Addr().String()), m
}

func TestAdminService(t *testing.T) {
	unix, tcp, _ := serveAdmin(t, false)
	ctx := asOperator(context.Background())
	// A server that cannot start: added, reported in backoff with the
	// error, listed, removed. (The MCP peers are exercised in pkg/mcp.)
	add := &pb.AddMcpServerRequest{Name: "broken", Config: &pb.McpServerConfig{
		Command: "/nonexistent/server", Risk: pb.RiskLevel_RISK_LEVEL_HIGH,
		ToolRisk: map[string]pb.RiskLevel{"t": pb.RiskLevel_RISK_LEVEL_LOW}, IdleTimeout: durationpb.New(5 * time.Second),
	}}
	resp, err := unix.AddMcpServer(ctx, add)
	if err != nil {
		t.Fatal(err)
	}
	st := resp.GetServer()
	if st.GetState() != pb.McpServerState_MCP_SERVER_STATE_BACKOFF || st.GetError() == "" || st.GetNextAttempt() == nil || st.GetTransport() != "stdio" {
		t.Fatalf("status %v", st)
	}
	if c := st.GetConfig(); c.GetRisk() != pb.RiskLevel_RISK_LEVEL_HIGH || c.GetToolRisk()["t"] != pb.RiskLevel_RISK_LEVEL_LOW || c.GetIdleTimeout().AsDuration() != 5*time.Second {
		t.Fatalf("config round trip %v", c)
	}

	errs := []struct {
		name   string
		client pb.AdminServiceClient
		call   func(pb.AdminServiceClient) error
		want   codes.Code
	}{
		{"duplicate name", unix, func(c pb.AdminServiceClient) error { _, err := c.AddMcpServer(ctx, add); return err }, codes.AlreadyExists},
		{"invalid entry", unix, func(c pb.AdminServiceClient) error {
			_, err := c.AddMcpServer(ctx, &pb.AddMcpServerRequest{Name: "x", Config: &pb.McpServerConfig{Url: "ftp://nope"}})
			return err
		}, codes.InvalidArgument},
		{"missing config", unix, func(c pb.AdminServiceClient) error {
			_, err := c.AddMcpServer(ctx, &pb.AddMcpServerRequest{Name: "x"})
			return err
		}, codes.InvalidArgument},
		{"remove unknown", unix, func(c pb.AdminServiceClient) error {
			_, err := c.RemoveMcpServer(ctx, &pb.RemoveMcpServerRequest{Name: "nope"})
			return err
		}, codes.NotFound},
		{"add over TCP without a token", tcp, func(c pb.AdminServiceClient) error {
			_, err := c.AddMcpServer(ctx, &pb.AddMcpServerRequest{Name: "y", Config: &pb.McpServerConfig{Command: "true"}})
			return err
		}, codes.PermissionDenied},
		{"remove over TCP without a token", tcp, func(c pb.AdminServiceClient) error {
			_, err := c.RemoveMcpServer(ctx, &pb.RemoveMcpServerRequest{Name: "broken"})
			return err
		}, codes.PermissionDenied},
		{"reauthorize unknown", unix, func(c pb.AdminServiceClient) error {
			_, err := c.ReauthorizeMcpServer(ctx, &pb.ReauthorizeMcpServerRequest{Name: "nope"})
			return err
		}, codes.NotFound},
		{"reauthorize a stdio server", unix, func(c pb.AdminServiceClient) error {
			_, err := c.ReauthorizeMcpServer(ctx, &pb.ReauthorizeMcpServerRequest{Name: "broken"})
			return err
		}, codes.InvalidArgument},
		{"reauthorize over TCP without a token", tcp, func(c pb.AdminServiceClient) error {
			_, err := c.ReauthorizeMcpServer(ctx, &pb.ReauthorizeMcpServerRequest{Name: "broken"})
			return err
		}, codes.PermissionDenied},
		{"list over TCP", tcp, func(c pb.AdminServiceClient) error {
			_, err := c.ListMcpServers(ctx, &pb.ListMcpServersRequest{})
			return err
		}, codes.OK},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Code(tt.call(tt.client)); got != tt.want {
				t.Fatalf("code %v, want %v", got, tt.want)
			}
		})
	}

	list, err := tcp.ListMcpServers(ctx, &pb.ListMcpServersRequest{})
	if err != nil || len(list.GetServers()) != 1 || list.GetServers()[0].GetName() != "broken" {
		t.Fatalf("list %v %v", list, err)
	}
	if _, err := unix.RemoveMcpServer(ctx, &pb.RemoveMcpServerRequest{Name: "broken"}); err != nil {
		t.Fatal(err)
	}
	if list, _ := unix.ListMcpServers(ctx, &pb.ListMcpServersRequest{}); len(list.GetServers()) != 0 {
		t.Fatalf("after remove: %v", list)
	}
}

// With a token (checked by the daemon's interceptor), TCP may change too.
func TestAdminServiceTCPWithToken(t *testing.T) {
	_, tcp, _ := serveAdmin(t, true)
	ctx := metadata.AppendToOutgoingContext(asOperator(context.Background()), "authorization", "bearer t")
	if _, err := tcp.AddMcpServer(ctx, &pb.AddMcpServerRequest{Name: "z", Config: &pb.McpServerConfig{Command: "/nonexistent"}}); err != nil {
		t.Fatal(err)
	}
}

// Issue 25 item 8: every AdminService RPC needs the operator credential,
// on the unix socket too; a refused add starts nothing.
func TestAdminServiceNeedsTheOperator(t *testing.T) {
	unix, _, m := serveAdmin(t, false)
	bg := context.Background()
	wrong := metadata.AppendToOutgoingContext(bg, service.OperatorMetadata, "not-the-key")
	secret := metadata.AppendToOutgoingContext(bg, service.SecretMetadata, "some-conversation-secret")
	for name, ctx := range map[string]context.Context{"nothing": bg, "a wrong key": wrong, "a conversation secret": secret} {
		t.Run(name, func(t *testing.T) {
			_, err := unix.ListMcpServers(ctx, &pb.ListMcpServersRequest{})
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "operator credential") {
				t.Fatalf("list: %v", err)
			}
			_, err = unix.AddMcpServer(ctx, &pb.AddMcpServerRequest{Name: "evil", Config: &pb.McpServerConfig{Command: "/nonexistent/evil"}})
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("add: %v", err)
			}
			if len(m.List()) != 0 {
				t.Fatalf("a refused add added %v", m.List())
			}
			_, err = unix.RemoveMcpServer(ctx, &pb.RemoveMcpServerRequest{Name: "evil"})
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("remove: %v", err)
			}
			_, err = unix.ReauthorizeMcpServer(ctx, &pb.ReauthorizeMcpServerRequest{Name: "evil"})
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("reauthorize: %v", err)
			}
		})
	}
}
