package service

import (
	"bytes"
	"context"
	"errors"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/checkpoint"
)

// Checkpoints is what the CheckpointService reads and rewinds (a
// *checkpoint.Recorder).
type Checkpoints interface {
	Calls(ctx context.Context, conversation, callID string) ([]checkpoint.Call, error)
	Rewind(ctx context.Context, conversation, callID string, opts checkpoint.RewindOptions) (*checkpoint.RewindReport, error)
	Content(s checkpoint.State) ([]byte, error)
}

// CheckpointServer implements the CheckpointService.
type CheckpointServer struct {
	pb.UnimplementedCheckpointServiceServer
	cp     Checkpoints
	off    error
	access *Access
}

var _ pb.CheckpointServiceServer = (*CheckpointServer)(nil)

// NewCheckpointServer returns the CheckpointService over cp. With cp nil,
// every RPC fails UNAVAILABLE with off's text. access decides who may read
// and rewind a conversation: its secret or the operator.
func NewCheckpointServer(cp Checkpoints, off error, access *Access) *CheckpointServer {
	return &CheckpointServer{cp: cp, off: off, access: access}
}

// maxDiffBytes cuts the diff of one file.
const maxDiffBytes = 64 << 10

func (s *CheckpointServer) check(ctx context.Context, conv, call string, needCall bool) error {
	switch {
	case conv == "":
		return status.Error(codes.InvalidArgument, "conversation_id is required")
	case needCall && call == "":
		return status.Error(codes.InvalidArgument, "call_id is required: the first call to undo")
	}
	if err := s.access.Conversation(ctx, conv, "the checkpoints"); err != nil {
		return err
	}
	if s.cp == nil {
		msg := "checkpoints are not available"
		if s.off != nil {
			msg += ": " + s.off.Error()
		}
		return status.Error(codes.Unavailable, msg)
	}
	return nil
}

func checkpointError(err error) error {
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, checkpoint.ErrDropped), errors.Is(err, checkpoint.ErrRunning):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Internal, "checkpoints: "+err.Error())
}

// Changes implements pb.CheckpointServiceServer.
func (s *CheckpointServer) Changes(ctx context.Context, req *pb.ChangesRequest) (*pb.ChangesResponse, error) {
	if err := s.check(ctx, req.GetConversationId(), req.GetCallId(), false); err != nil {
		return nil, err
	}
	calls, err := s.cp.Calls(ctx, req.GetConversationId(), req.GetCallId())
	if err != nil {
		return nil, checkpointError(err)
	}
	resp := &pb.ChangesResponse{}
	for _, c := range calls {
		pc := &pb.CallChanges{CallId: c.CallID, Seq: c.Seq, StartedAt: timestamppb.New(c.Started)}
		if !c.Ended.IsZero() {
			pc.EndedAt = timestamppb.New(c.Ended)
		}
		for _, ch := range c.Changes {
			p := &pb.PathChange{Path: ch.Path, Before: pathState(ch.Before), After: pathState(ch.After)}
			if req.GetDiff() {
				p.Diff = s.diff(ch)
			}
			pc.Changes = append(pc.Changes, p)
		}
		resp.Calls = append(resp.Calls, pc)
	}
	return resp, nil
}

// diff is the unified diff of a text file's change, or "" when either
// side is not a kept text file.
func (s *CheckpointServer) diff(ch checkpoint.Change) string {
	text := func(st checkpoint.State) (string, bool) {
		switch st.Kind {
		case checkpoint.Absent:
			return "", true
		case checkpoint.File:
			b, err := s.cp.Content(st)
			if err != nil || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
				return "", false
			}
			return string(b), true
		}
		return "", false
	}
	before, ok1 := text(ch.Before)
	after, ok2 := text(ch.After)
	if !ok1 || !ok2 || before == after {
		return ""
	}
	from, to := "a/"+ch.Path, "b/"+ch.Path
	if ch.Before.Kind == checkpoint.Absent {
		from = "/dev/null"
	}
	if ch.After.Kind == checkpoint.Absent {
		to = "/dev/null"
	}
	u, err := udiff.ToUnifiedDiff(from, to, before, udiff.Lines(before, after), 3)
	if err != nil {
		return ""
	}
	d := u.String()
	if len(d) > maxDiffBytes {
		cut := maxDiffBytes
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut] + "\n[diff cut at 64 KiB]\n"
	}
	return d
}

func pathState(s checkpoint.State) *pb.PathState {
	return &pb.PathState{Kind: s.Kind.String(), Mode: s.Mode, Size: s.Size, Sha256: s.Hash, Target: s.Target}
}

// Rewind implements pb.CheckpointServiceServer.
func (s *CheckpointServer) Rewind(ctx context.Context, req *pb.RewindRequest) (*pb.RewindResponse, error) {
	if err := s.check(ctx, req.GetConversationId(), req.GetCallId(), true); err != nil {
		return nil, err
	}
	rep, err := s.cp.Rewind(ctx, req.GetConversationId(), req.GetCallId(), checkpoint.RewindOptions{DryRun: req.GetDryRun(), Force: req.GetForce()})
	if err != nil {
		return nil, checkpointError(err)
	}
	resp := &pb.RewindResponse{UndoneCallIds: rep.Calls, Applied: rep.Applied, Conflicts: int32(rep.Conflicts())}
	for _, a := range rep.Actions {
		resp.Actions = append(resp.Actions, &pb.RewindAction{Path: a.Path, Op: a.Op, Current: pathState(a.Current), Target: pathState(a.Target),
			Conflict: a.Conflict, Error: a.Err, Done: a.Done})
	}
	return resp, nil
}
