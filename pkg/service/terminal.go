package service

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools/terminal"
)

// Terminals is what the TerminalService needs of the session manager;
// TerminalsOf adapts a *terminal.Manager.
type Terminals interface {
	// List describes the sessions of a conversation, or all when
	// conversationID is empty, oldest first.
	List(conversationID string) []terminal.SessionInfo
	// Get returns a session of any conversation by id; an unknown id is an
	// errdefs.ErrFailed error.
	Get(id string) (TerminalSession, error)
	// Open returns the conversation's session named opts.Name, starting it
	// when needed (see terminal.Manager.OpenSession); reused says it was
	// already running.
	Open(ctx context.Context, conversationID string, opts terminal.SessionOptions) (s TerminalSession, reused bool, err error)
}

// TerminalSession is one session as the TerminalService drives it;
// *terminal.Session implements it.
type TerminalSession interface {
	// Info describes the session now.
	Info() terminal.SessionInfo
	// ReadFrom waits for output from index from and returns at most limit
	// bytes of it, starting at start (> from when bytes were dropped); it
	// returns io.EOF once the session has exited and all was read.
	ReadFrom(ctx context.Context, from int64, limit int) (data []byte, start, next int64, err error)
	// Write types p into the terminal.
	Write(p []byte) error
	// Resize sets the terminal's size.
	Resize(rows, cols int) error
	// Close stops the session and waits until it is gone or ctx ends.
	Close(ctx context.Context) error
	// Attach counts an attached client until detach is called.
	Attach() (detach func())
}

var _ TerminalSession = (*terminal.Session)(nil)

// TerminalsOf adapts a terminal manager to Terminals. With a nil m (toold
// started without a shell) there are no sessions, and Get and Open fail
// with ErrUnavailable.
func TerminalsOf(m *terminal.Manager) Terminals { return managerTerminals{m} }

type managerTerminals struct{ m *terminal.Manager }

var errNoTerminals = errdefs.New(errdefs.ErrUnavailable, "terminals are not available on this toold: no shell is installed (see ListTools)")

func (t managerTerminals) List(conv string) []terminal.SessionInfo {
	if t.m == nil {
		return nil
	}
	return t.m.Sessions(conv)
}

func (t managerTerminals) Get(id string) (TerminalSession, error) {
	if t.m == nil {
		return nil, errNoTerminals
	}
	s, err := t.m.SessionByID(id)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (t managerTerminals) Open(ctx context.Context, conv string, opts terminal.SessionOptions) (TerminalSession, bool, error) {
	if t.m == nil {
		return nil, false, errNoTerminals
	}
	s, reused, _, err := t.m.OpenSession(ctx, conv, opts)
	if err != nil {
		return nil, false, err
	}
	return s, reused, nil
}

// attachChunk is the most output bytes one TerminalOutput carries.
const attachChunk = 32 << 10

// closeOnDetachTimeout bounds closing a close_on_detach session after its
// client left.
const closeOnDetachTimeout = 10 * time.Second

// errDetached ends an attach whose client closed its side.
var errDetached = errors.New("the client detached")

// TerminalServer implements the TerminalService over Terminals. Create it
// with NewTerminalServer.
type TerminalServer struct {
	pb.UnimplementedTerminalServiceServer
	ts    Terminals
	convs *executor.Conversations
	// tokenRequired says toold checks a bearer token on every RPC; without
	// one, Attach is allowed over the unix socket only.
	tokenRequired bool
	access        *Access
}

var _ pb.TerminalServiceServer = (*TerminalServer)(nil)

// NewTerminalServer returns the TerminalService. tokenRequired tells
// whether the daemon's auth interceptor requires a bearer token: without
// one, Attach (a shell outside the tool policy) is refused over TCP, as
// AdminService refuses changes. convs is the ToolService's conversation
// registry (executor.Executor.Conversations): an attach joins the session's
// conversation with its secret, as a stream does. Required. access decides
// who may list sessions (one conversation's: its secret or the operator;
// every conversation's: the operator) and lets the operator attach to any
// session without its conversation's secret (nil access: nobody).
func NewTerminalServer(ts Terminals, tokenRequired bool, convs *executor.Conversations, access *Access) *TerminalServer {
	return &TerminalServer{ts: ts, tokenRequired: tokenRequired, convs: convs, access: access}
}

// ListSessions implements pb.TerminalServiceServer.
func (s *TerminalServer) ListSessions(ctx context.Context, req *pb.ListSessionsRequest) (*pb.ListSessionsResponse, error) {
	if err := s.access.Conversation(ctx, req.GetConversationId(), "the terminal sessions"); err != nil {
		return nil, err
	}
	resp := &pb.ListSessionsResponse{}
	for _, in := range s.ts.List(req.GetConversationId()) {
		resp.Sessions = append(resp.Sessions, sessionToPB(in))
	}
	return resp, nil
}

// Attach implements pb.TerminalServiceServer; see the proto for the
// contract. This handler's goroutine is the only one that sends; a
// receiver goroutine forwards input and resizes, and ends (at the latest)
// when the stream does.
func (s *TerminalServer) Attach(stream pb.TerminalService_AttachServer) error {
	ctx := stream.Context()
	if !s.tokenRequired {
		if p, ok := peer.FromContext(ctx); !ok || p.Addr == nil || p.Addr.Network() != "unix" {
			return status.Error(codes.PermissionDenied,
				"attaching to a terminal over TCP needs toold to run with a token (--token); use the unix socket, or set a token")
		}
	}
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "the stream ended before an AttachOpen")
		}
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return status.Error(codes.InvalidArgument, "the first message must be an AttachOpen")
	}
	var (
		sess          TerminalSession
		created       bool
		closeOnDetach bool
		secret        string // handed out for a new session
	)
	switch t := open.GetTarget().(type) {
	case *pb.AttachOpen_SessionId:
		if sess, err = s.ts.Get(t.SessionId); err != nil {
			return status.Error(codes.NotFound, errdefs.As(err).Msg)
		}
		// The session's conversation, with its secret: nothing of the
		// session is sent or typed into before this. The operator attaches
		// without it (and does not hold the conversation: it may still be
		// reaped when idle, which ends its sessions).
		if !s.access.Operator(ctx) {
			leave, err := s.convs.JoinExisting(sess.Info().ConversationID, open.GetConversationSecret())
			if err != nil {
				e := errdefs.As(err)
				return status.Error(GRPCCode(e), e.Msg)
			}
			defer leave()
		}
	case *pb.AttachOpen_NewSession:
		ns := t.NewSession
		if len(ns.GetConversationId()) > executor.MaxConversationID {
			return status.Errorf(codes.InvalidArgument, "conversation_id is %d bytes; at most %d are allowed", len(ns.GetConversationId()), executor.MaxConversationID)
		}
		conv, sec, leave, err := s.convs.Join(ns.GetConversationId(), open.GetConversationSecret(), "attach-")
		if err != nil {
			e := errdefs.As(err)
			return status.Error(GRPCCode(e), e.Msg)
		}
		defer leave()
		secret = sec
		opts := terminal.SessionOptions{Name: ns.GetName(), WorkingDir: ns.GetWorkingDir(), Shell: ns.GetShell()}
		if sz := open.GetSize(); sz != nil {
			opts.Rows, opts.Cols = int(sz.GetRows()), int(sz.GetCols())
		}
		var reused bool
		if sess, reused, err = s.ts.Open(ctx, conv, opts); err != nil {
			e := errdefs.As(err)
			return status.Error(GRPCCode(e), e.Msg)
		}
		created = !reused
		closeOnDetach = created && ns.GetCloseOnDetach()
	default:
		return status.Error(codes.InvalidArgument, "AttachOpen needs a session_id or a new_session")
	}
	if closeOnDetach {
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), closeOnDetachTimeout)
			_ = sess.Close(cctx)
			cancel()
		}()
	}
	if sz := open.GetSize(); sz != nil && !created {
		// An exited session cannot be resized; the client still gets its
		// output and the SessionExited.
		_ = sess.Resize(int(sz.GetRows()), int(sz.GetCols()))
	}
	detach := sess.Attach()
	defer detach()
	info := sess.Info()
	from := info.NextIndex
	switch {
	case open.FromIndex != nil:
		from = int64(open.GetFromIndex())
	case open.GetReplayBytes() > 0:
		from = max(0, info.NextIndex-int64(open.GetReplayBytes()))
	}
	if err := stream.Send(&pb.AttachResponse{Msg: &pb.AttachResponse_Attached{Attached: &pb.Attached{
		Session: sessionToPB(info), Created: created, ConversationSecret: secret,
	}}}); err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		cancel(attachReceive(stream, sess))
	}()
	for {
		data, start, next, err := sess.ReadFrom(ctx, from, attachChunk)
		switch {
		case errors.Is(err, io.EOF):
			in := sess.Info()
			return stream.Send(&pb.AttachResponse{Msg: &pb.AttachResponse_Exited{Exited: &pb.SessionExited{
				Outcome: in.Outcome, ExitCode: int32(in.ExitCode),
			}}})
		case errors.Is(err, errDetached):
			return nil
		case err != nil:
			if _, ok := status.FromError(err); ok {
				return err
			}
			return status.FromContextError(err).Err()
		}
		out := &pb.TerminalOutput{Data: data, Index: uint64(start)}
		if start > from {
			out.Dropped = uint64(start - from)
		}
		if err := stream.Send(&pb.AttachResponse{Msg: &pb.AttachResponse_Output{Output: out}}); err != nil {
			return err
		}
		from = next
	}
}

// attachReceive forwards an attached client's input and resizes until the
// client closes its side (errDetached) or the stream fails. Input the
// session cannot take (it exited, or its program does not read) is
// dropped: the client sees the session's state in its output.
func attachReceive(stream pb.TerminalService_AttachServer, sess TerminalSession) error {
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errDetached
		}
		if err != nil {
			return err
		}
		switch msg := m.GetMsg().(type) {
		case *pb.AttachRequest_Input:
			_ = sess.Write(msg.Input)
		case *pb.AttachRequest_Resize:
			_ = sess.Resize(int(msg.Resize.GetRows()), int(msg.Resize.GetCols()))
		}
	}
}

func sessionToPB(in terminal.SessionInfo) *pb.TerminalSession {
	return &pb.TerminalSession{
		SessionId:      in.ID,
		ConversationId: in.ConversationID,
		Name:           in.Name,
		WorkingDir:     in.Dir,
		Command:        in.Command,
		Pid:            int32(in.PID),
		Size:           &pb.TerminalSize{Rows: uint32(in.Rows), Cols: uint32(in.Cols)},
		CreateTime:     timestamppb.New(in.Created),
		Exited:         in.State == "exited",
		Outcome:        in.Outcome,
		ExitCode:       int32(in.ExitCode),
		FirstIndex:     uint64(in.FirstIndex),
		NextIndex:      uint64(in.NextIndex),
		Attached:       int32(in.Attached),
	}
}
