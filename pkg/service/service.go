// Package service adapts toold's executor (pkg/executor) to gRPC: it
// receives client messages, converts between the wire types in gen/ and
// the plain Go types of pkg/tools, pkg/authz and pkg/events, and sends each
// stream's events, read from its session's event log.
package service

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/sandbox"
)

// Options configures a Server. Zero values take defaults.
type Options struct {
	// KeepaliveInterval is how long a stream may be idle before a Keepalive
	// event (default 15 s; negative disables).
	KeepaliveInterval time.Duration
	// MaxMessageBytes bounds one client message (default 4 MiB); a larger
	// one is refused on its own (see GRPCServerOptions).
	MaxMessageBytes int
	// Logger receives stream-level lines (refused streams).
	Logger *slog.Logger
	// Sandbox is the boundary around commands, reported in Welcome and
	// ListTools. Nil layers mean commands run without a sandbox.
	Sandbox []sandbox.Layer
}

func (o Options) withDefaults() Options {
	if o.KeepaliveInterval == 0 {
		o.KeepaliveInterval = 15 * time.Second
	}
	if o.KeepaliveInterval < 0 {
		o.KeepaliveInterval = 0
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Server implements the ToolService over an executor.
type Server struct {
	pb.UnimplementedToolServiceServer

	opts Options
	x    *executor.Executor
}

var _ pb.ToolServiceServer = (*Server)(nil)

// New returns the ToolService of x.
func New(x *executor.Executor, opts Options) *Server {
	return &Server{opts: opts.withDefaults(), x: x}
}

// Executor returns the executor the server serves.
func (s *Server) Executor() *executor.Executor { return s.x }

// ListTools implements pb.ToolServiceServer.
func (s *Server) ListTools(_ context.Context, req *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	reg := s.x.Registry()
	infos := reg.List()
	off := reg.Unavailable()
	d, dinfos, doff, err := reg.DialectListing(req.GetDialect())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if d != nil {
		infos, off = dinfos, doff
	}
	resp := &pb.ListToolsResponse{Tools: make([]*pb.ToolSpec, 0, len(infos))}
	if d != nil {
		resp.Dialect, resp.DialectVersion = d.Name, d.Version
	}
	for _, in := range infos {
		ts := &pb.ToolSpec{
			Name:        in.Spec.Name,
			Description: in.Spec.Description,
			InputSchema: string(in.Schema),
			Risk:        riskToPB(in.Risk),
			Source:      in.Spec.Source,
			Aliases:     in.Spec.Aliases,
		}
		if in.Spec.Consolidated() {
			for _, op := range in.Spec.Operations {
				ts.Operations = append(ts.Operations, &pb.Operation{
					Name: op.Name, Description: op.Description, Risk: riskToPB(op.Risk), InputSchema: string(op.Schema),
				})
			}
		}
		resp.Tools = append(resp.Tools, ts)
	}
	for _, u := range off {
		resp.Unavailable = append(resp.Unavailable, &pb.UnavailableTool{Name: u.Name, Operations: u.Operations, Reason: u.Reason})
	}
	resp.Sandbox = SandboxToPB(s.opts.Sandbox)
	if req.GetFormat() != pb.ToolFormat_TOOL_FORMAT_UNSPECIFIED || req.GetStrict() {
		r, err := render(infos, req.GetFormat(), req.GetFlatOperations(), req.GetStrict())
		if err != nil {
			return nil, err
		}
		resp.RenderedJson = r
	}
	return resp, nil
}

// SandboxToPB converts the layers of the boundary around commands (nil:
// no sandbox) for Welcome, ListTools and toolctl.
func SandboxToPB(layers []sandbox.Layer) *pb.SandboxStatus {
	st := &pb.SandboxStatus{Enabled: layers != nil, Complete: layers != nil}
	for _, l := range layers {
		st.Layers = append(st.Layers, &pb.SandboxLayer{Name: l.Name, InForce: l.InForce, Detail: l.Detail})
		if !l.InForce {
			st.Complete = false
		}
	}
	return st
}
