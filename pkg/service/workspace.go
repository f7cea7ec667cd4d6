package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools/fileops"
	"github.com/toold/toold/pkg/workspace"
)

// WorkspaceServer is the WorkspaceService: watching the workspace's files.
type WorkspaceServer struct {
	pb.UnimplementedWorkspaceServiceServer
	ws        *workspace.Workspace
	x         *executor.Executor
	explainer authz.Explainer
	access    *Access
	stopOnce  sync.Once
	stop      chan struct{}
	// watches bounds the watches running at once (each holds an inotify
	// instance, of which a user has 128 by default).
	watches chan struct{}
}

// MaxWatches is how many Watch streams a daemon runs at once; more are
// RESOURCE_EXHAUSTED.
const MaxWatches = 32

var _ pb.WorkspaceServiceServer = (*WorkspaceServer)(nil)

// NewWorkspaceServer returns the WorkspaceService of ws. A watch is
// authorized as x would judge a file_operations.list_dir of its path,
// through explainer (nil: only the workspace boundary is checked); access
// decides who may ask (the operator, or a conversation's secret).
func NewWorkspaceServer(ws *workspace.Workspace, x *executor.Executor, explainer authz.Explainer, access *Access) *WorkspaceServer {
	return NewWorkspaceServerMax(ws, x, explainer, access, MaxWatches)
}

// NewWorkspaceServerMax is NewWorkspaceServer with at most max watches at
// once.
func NewWorkspaceServerMax(ws *workspace.Workspace, x *executor.Executor, explainer authz.Explainer, access *Access, max int) *WorkspaceServer {
	return &WorkspaceServer{ws: ws, x: x, explainer: explainer, access: access, stop: make(chan struct{}), watches: make(chan struct{}, max)}
}

// Shutdown ends every Watch stream (with OK); later watches end at once.
// Call it before the gRPC server's GracefulStop.
func (s *WorkspaceServer) Shutdown() { s.stopOnce.Do(func() { close(s.stop) }) }

// Watch implements pb.WorkspaceServiceServer.
func (s *WorkspaceServer) Watch(req *pb.WatchRequest, stream grpc.ServerStreamingServer[pb.WatchResponse]) error {
	ctx := stream.Context()
	conv := req.GetConversationId()
	if err := s.access.Conversation(ctx, conv, "watching the workspace"); err != nil {
		return err
	}
	p := req.GetPath()
	if p == "" {
		p = "."
	}
	loc, err := s.ws.Resolve(p)
	if err != nil {
		return status.Error(GRPCCode(err), errdefs.As(err).Msg)
	}
	if !loc.Inside {
		return status.Errorf(codes.PermissionDenied, "%q is outside the workspace; only the workspace can be watched", p)
	}
	if !loc.Exists {
		return status.Errorf(codes.NotFound, "%q does not exist in the workspace", p)
	}
	if err := s.authorize(ctx, conv, loc); err != nil {
		return err
	}
	select {
	case s.watches <- struct{}{}:
		defer func() { <-s.watches }()
	default:
		return status.Errorf(codes.ResourceExhausted, "%d watches are running, the most toold runs at once; end one first", cap(s.watches))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	opt := fileops.WatchOptions{Recursive: req.GetRecursive(), Window: time.Duration(req.GetCoalesceMs()) * time.Millisecond, MaxDirs: int(req.GetMaxDirectories())}
	err = fileops.Watch(ctx, s.ws, loc.Rel, opt, func(ev fileops.WatchEvent) error {
		resp := &pb.WatchResponse{Notice: ev.Notice}
		if ev.Started {
			resp.Started = &pb.WatchStarted{Path: ev.Path, Directories: int32(ev.Dirs)}
		}
		for _, c := range ev.Changes {
			resp.Changes = append(resp.Changes, &pb.FileChange{Path: c.Path, Kind: changeKindToPB(c.Kind), Directory: c.Dir})
		}
		return stream.Send(resp)
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && stream.Context().Err() != nil:
		return status.FromContextError(stream.Context().Err()).Err()
	case errors.Is(err, errdefs.ErrInternal):
		return status.Error(codes.Internal, "watching failed; the details are in toold's log")
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.Error(GRPCCode(err), errdefs.As(err).Msg)
}

// authorize judges the watch as a list_dir of its directory: only an
// allow lets it run (a watch cannot ask a person).
func (s *WorkspaceServer) authorize(ctx context.Context, conv string, loc workspace.Location) error {
	if s.explainer == nil || s.x == nil {
		return nil
	}
	ex := s.x.Explain(ctx, s.explainer, &executor.CallRequest{CallID: "watch", ConversationID: conv,
		Name: "file_operations.list_dir", Args: map[string]any{"path": loc.Abs}, Mode: s.x.Mode()})
	if ex.Err != nil {
		return status.Error(GRPCCode(ex.Err), errdefs.As(ex.Err).Msg)
	}
	switch ex.Verdict.Decision {
	case authz.Allow:
		return nil
	case authz.Ask:
		return status.Errorf(codes.PermissionDenied, "reading %q needs a person's approval under toold's policy (%s), and a watch cannot ask; allow reads of it with a policy rule", loc.Given, ex.Verdict.Reason)
	}
	return status.Errorf(codes.PermissionDenied, "toold's policy denies reading %q: %s", loc.Given, ex.Verdict.Reason)
}

func changeKindToPB(k fileops.ChangeKind) pb.FileChangeKind {
	switch k {
	case fileops.Created:
		return pb.FileChangeKind_FILE_CHANGE_KIND_CREATED
	case fileops.Changed:
		return pb.FileChangeKind_FILE_CHANGE_KIND_CHANGED
	case fileops.Removed:
		return pb.FileChangeKind_FILE_CHANGE_KIND_REMOVED
	}
	return pb.FileChangeKind_FILE_CHANGE_KIND_UNSPECIFIED
}
