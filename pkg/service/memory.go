package service

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/memory"
)

// MemoryServer is the MemoryService: the todo lists of the daemon's
// workspace, read and watched.
type MemoryServer struct {
	pb.UnimplementedMemoryServiceServer
	store     *memory.Store
	workspace string
	unavail   error
	access    *Access
	stopOnce  sync.Once
	stop      chan struct{}
}

// maxTodoLists bounds the lists GetTodos and WatchTodos return at once.
const maxTodoLists = 100

// NewMemoryServer returns the MemoryService over store for the workspace
// identified by workspace. With a nil store every RPC fails UNAVAILABLE,
// saying why (unavailable). access decides who may read which todo lists:
// one conversation's needs its secret or the operator, every
// conversation's the operator (nil access: nobody).
func NewMemoryServer(store *memory.Store, workspace string, unavailable error, access *Access) *MemoryServer {
	return &MemoryServer{store: store, workspace: workspace, unavail: unavailable, access: access, stop: make(chan struct{})}
}

// Shutdown ends every WatchTodos stream (with OK); later watches end at
// once. Call it before the gRPC server's GracefulStop.
func (s *MemoryServer) Shutdown() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *MemoryServer) lists(ctx context.Context, conv string) ([]*memory.TodoList, error) {
	if s.store == nil {
		return nil, status.Errorf(codes.Unavailable, "memory is unavailable on this toold: %v", s.unavail)
	}
	if conv != "" {
		l, err := s.store.Todos(ctx, memory.Owner{Workspace: s.workspace, Conversation: conv})
		if err != nil {
			return nil, memoryStatus(err)
		}
		return []*memory.TodoList{l}, nil
	}
	ls, err := s.store.TodoLists(ctx, s.workspace, maxTodoLists)
	if err != nil {
		return nil, memoryStatus(err)
	}
	return ls, nil
}

// GetTodos implements pb.MemoryServiceServer.
func (s *MemoryServer) GetTodos(ctx context.Context, req *pb.GetTodosRequest) (*pb.GetTodosResponse, error) {
	if err := s.access.Conversation(ctx, req.GetConversationId(), "the todo lists"); err != nil {
		return nil, err
	}
	ls, err := s.lists(ctx, req.GetConversationId())
	if err != nil {
		return nil, err
	}
	resp := &pb.GetTodosResponse{}
	for _, l := range ls {
		resp.Lists = append(resp.Lists, todoListToPB(l))
	}
	return resp, nil
}

// WatchTodos implements pb.MemoryServiceServer. It subscribes before it
// reads the current lists, so no change falls between the two; a change
// seen in both is sent once (versions only grow).
func (s *MemoryServer) WatchTodos(req *pb.WatchTodosRequest, stream pb.MemoryService_WatchTodosServer) error {
	ctx := stream.Context()
	if err := s.access.Conversation(ctx, req.GetConversationId(), "the todo lists"); err != nil {
		return err
	}
	if s.store == nil {
		return status.Errorf(codes.Unavailable, "memory is unavailable on this toold: %v", s.unavail)
	}
	changes, stop := s.store.Watch(s.workspace, req.GetConversationId())
	defer stop()
	ls, err := s.lists(ctx, req.GetConversationId())
	if err != nil {
		return err
	}
	sent := map[string]uint64{}
	for _, l := range ls {
		if err := stream.Send(&pb.WatchTodosResponse{List: todoListToPB(l)}); err != nil {
			return err
		}
		sent[l.Conversation] = l.Version
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.stop:
			return nil
		case l, ok := <-changes:
			if !ok {
				return nil // the store closed: the daemon is stopping
			}
			if v, ok := sent[l.Conversation]; ok && l.Version <= v {
				continue
			}
			sent[l.Conversation] = l.Version
			if err := stream.Send(&pb.WatchTodosResponse{List: todoListToPB(l)}); err != nil {
				return err
			}
		}
	}
}

func memoryStatus(err error) error {
	if e := errdefs.As(err); e != nil {
		return status.Error(GRPCCode(e), e.Msg)
	}
	return status.Error(codes.Internal, "internal error; the details are in the toold log")
}

var todoStatusToPB = map[memory.TodoStatus]pb.TodoStatus{
	memory.TodoPending:    pb.TodoStatus_TODO_STATUS_PENDING,
	memory.TodoInProgress: pb.TodoStatus_TODO_STATUS_IN_PROGRESS,
	memory.TodoCompleted:  pb.TodoStatus_TODO_STATUS_COMPLETED,
	memory.TodoCancelled:  pb.TodoStatus_TODO_STATUS_CANCELLED,
}

func todoListToPB(l *memory.TodoList) *pb.TodoList {
	out := &pb.TodoList{ConversationId: l.Conversation, Version: l.Version}
	if !l.Updated.IsZero() {
		out.Updated = timestamppb.New(l.Updated)
	}
	for _, t := range l.Todos {
		out.Todos = append(out.Todos, &pb.Todo{Id: t.ID, Title: t.Title, Status: todoStatusToPB[t.Status], Note: t.Note})
	}
	return out
}
