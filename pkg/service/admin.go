package service

import (
	"strings"

	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/mcp"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/service/mcppb"
)

// MCPAdmin is what the AdminService needs of the MCP client side;
// *mcp.Manager implements it.
type MCPAdmin interface {
	// List returns every server's status, sorted by name.
	List() []mcp.Status
	// Add starts a server and returns its status after the first attempt.
	Add(ctx context.Context, name string, cfg mcpconfig.Server) (mcp.Status, error)
	// Remove stops a server and takes its tools out of the registry.
	Remove(ctx context.Context, name string) error
	// Reauthorize discards a server's stored OAuth token and restarts
	// it, returning its status after the first attempt.
	Reauthorize(ctx context.Context, name string) (mcp.Status, error)
}

var _ MCPAdmin = (*mcp.Manager)(nil)

// Admin implements the AdminService over an MCPAdmin. Create it with
// NewAdmin.
type Admin struct {
	pb.UnimplementedAdminServiceServer
	mcp MCPAdmin
	// tokenRequired says toold checks a bearer token on every RPC; then the
	// changing RPCs are allowed over TCP too.
	tokenRequired bool
	// access recognises the operator, the only caller of every RPC here.
	access *Access
}

var _ pb.AdminServiceServer = (*Admin)(nil)

// NewAdmin returns the AdminService. Every RPC needs the operator
// credential (access; a nil access refuses every caller): the servers'
// configurations name commands and their environment, and a server added
// runs outside toold's sandbox as the operator's own. tokenRequired tells
// whether the daemon's auth interceptor requires a bearer token: without
// one, servers may be added and removed only over the unix socket.
func NewAdmin(m MCPAdmin, tokenRequired bool, access *Access) *Admin {
	return &Admin{mcp: m, tokenRequired: tokenRequired, access: access}
}

// ListMcpServers implements pb.AdminServiceServer.
func (a *Admin) ListMcpServers(ctx context.Context, _ *pb.ListMcpServersRequest) (*pb.ListMcpServersResponse, error) {
	if err := a.access.RequireOperator(ctx, "listing MCP servers"); err != nil {
		return nil, err
	}
	resp := &pb.ListMcpServersResponse{}
	for _, st := range a.mcp.List() {
		resp.Servers = append(resp.Servers, mcpStatusToPB(st))
	}
	return resp, nil
}

// AddMcpServer implements pb.AdminServiceServer.
func (a *Admin) AddMcpServer(ctx context.Context, req *pb.AddMcpServerRequest) (*pb.AddMcpServerResponse, error) {
	if err := a.access.RequireOperator(ctx, "adding an MCP server"); err != nil {
		return nil, err
	}
	if err := a.mayChange(ctx); err != nil {
		return nil, err
	}
	if req.GetName() == "" || req.GetConfig() == nil {
		return nil, status.Error(codes.InvalidArgument, "name and config are required")
	}
	st, err := a.mcp.Add(ctx, req.GetName(), mcppb.ConfigFromPB(req.GetConfig()))
	if err != nil {
		return nil, adminError(err)
	}
	return &pb.AddMcpServerResponse{Server: mcpStatusToPB(st)}, nil
}

// RemoveMcpServer implements pb.AdminServiceServer.
func (a *Admin) RemoveMcpServer(ctx context.Context, req *pb.RemoveMcpServerRequest) (*pb.RemoveMcpServerResponse, error) {
	if err := a.access.RequireOperator(ctx, "removing an MCP server"); err != nil {
		return nil, err
	}
	if err := a.mayChange(ctx); err != nil {
		return nil, err
	}
	if err := a.mcp.Remove(ctx, req.GetName()); err != nil {
		return nil, adminError(err)
	}
	return &pb.RemoveMcpServerResponse{}, nil
}

// ReauthorizeMcpServer implements pb.AdminServiceServer.
func (a *Admin) ReauthorizeMcpServer(ctx context.Context, req *pb.ReauthorizeMcpServerRequest) (*pb.ReauthorizeMcpServerResponse, error) {
	if err := a.access.RequireOperator(ctx, "authorizing an MCP server again"); err != nil {
		return nil, err
	}
	if err := a.mayChange(ctx); err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	st, err := a.mcp.Reauthorize(ctx, req.GetName())
	if err != nil {
		return nil, adminError(err)
	}
	return &pb.ReauthorizeMcpServerResponse{Server: mcpStatusToPB(st)}, nil
}

// mayChange refuses changes over TCP when no token guards it: adding a
// stdio server runs a command outside the tool policy.
func (a *Admin) mayChange(ctx context.Context) error {
	if a.tokenRequired {
		return nil
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil && p.Addr.Network() == "unix" {
		return nil
	}
	return status.Error(codes.PermissionDenied,
		"adding or removing MCP servers over TCP needs toold to run with a token (--token); use the unix socket, or set a token")
}

// adminError maps the Manager's errors to gRPC statuses.
func adminError(err error) error {
	switch {
	case errors.Is(err, mcp.ErrServerExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, mcp.ErrServerNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	e := errdefs.As(err)
	return status.Error(GRPCCode(e), e.Msg)
}

func mcpStatusToPB(s mcp.Status) *pb.McpServerStatus {
	out := &pb.McpServerStatus{
		Name:             s.Name,
		Config:           mcppb.ConfigToPB(s.Config),
		Transport:        s.Transport,
		State:            mcpStateToPB(s.State),
		Error:            s.Err,
		Restarts:         int32(s.Restarts),
		Pid:              int32(s.PID),
		ServerName:       s.ServerName,
		ServerVersion:    s.ServerVersion,
		ProtocolVersion:  s.ProtocolVersion,
		Tools:            s.Tools,
		AuthorizationUrl: s.AuthURL,
	}
	if o := out.Config.GetOauth(); o != nil && o.ClientSecret != "" && !strings.HasPrefix(o.ClientSecret, "${") {
		// A listing shows that a secret is set, not the secret.
		o.ClientSecret = "********"
	}
	if !s.Since.IsZero() {
		out.Since = timestamppb.New(s.Since)
	}
	if !s.NextAttempt.IsZero() {
		out.NextAttempt = timestamppb.New(s.NextAttempt)
	}
	for _, r := range s.Refused {
		out.Refused = append(out.Refused, &pb.RefusedMcpTool{Name: r.Name, Reason: r.Reason})
	}
	return out
}

func mcpStateToPB(s mcp.State) pb.McpServerState {
	switch s {
	case mcp.StateConnecting:
		return pb.McpServerState_MCP_SERVER_STATE_CONNECTING
	case mcp.StateConnected:
		return pb.McpServerState_MCP_SERVER_STATE_CONNECTED
	case mcp.StateBackoff:
		return pb.McpServerState_MCP_SERVER_STATE_BACKOFF
	case mcp.StateDisabled:
		return pb.McpServerState_MCP_SERVER_STATE_DISABLED
	case mcp.StateStopped:
		return pb.McpServerState_MCP_SERVER_STATE_STOPPED
	case mcp.StateAuthorizing:
		return pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING
	}
	return pb.McpServerState_MCP_SERVER_STATE_UNSPECIFIED
}
