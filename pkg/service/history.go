package service

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/history"
)

// HistoryQuerier is what the HistoryService reads (a *history.Store).
type HistoryQuerier interface {
	Query(ctx context.Context, f history.Filter) ([]history.Entry, error)
}

// HistoryServer implements the HistoryService.
type HistoryServer struct {
	pb.UnimplementedHistoryServiceServer
	q      HistoryQuerier
	off    error
	access *Access
}

var _ pb.HistoryServiceServer = (*HistoryServer)(nil)

// NewHistoryServer returns the HistoryService over q. With q nil, every
// RPC fails UNAVAILABLE with off's text (history turned off, or its store
// could not be opened). access decides who may read which conversation's
// calls: a query of one conversation needs its secret or the operator, a
// query of every conversation the operator (nil access: nobody).
func NewHistoryServer(q HistoryQuerier, off error, access *Access) *HistoryServer {
	return &HistoryServer{q: q, off: off, access: access}
}

// Query implements pb.HistoryServiceServer.
func (h *HistoryServer) Query(ctx context.Context, req *pb.QueryHistoryRequest) (*pb.QueryHistoryResponse, error) {
	if err := h.access.Conversation(ctx, req.GetConversationId(), "the history"); err != nil {
		return nil, err
	}
	if h.q == nil {
		msg := "history is not available"
		if h.off != nil {
			msg += ": " + h.off.Error()
		}
		return nil, status.Error(codes.Unavailable, msg)
	}
	f := history.Filter{
		Conversation: req.GetConversationId(), Tool: req.GetTool(), Outcome: req.GetOutcome(),
		Limit: int(req.GetLimit()), BeforeID: req.GetBeforeId(),
	}
	if req.Since != nil {
		f.Since = req.GetSince().AsTime()
	}
	if req.Until != nil {
		f.Until = req.GetUntil().AsTime()
	}
	entries, err := h.q.Query(ctx, f)
	if errors.Is(err, history.ErrInvalid) {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err != nil {
		return nil, status.Error(codes.Unavailable, "history store: "+err.Error())
	}
	resp := &pb.QueryHistoryResponse{}
	for _, e := range entries {
		pe := &pb.HistoryEntry{
			Id: e.ID, ConversationId: e.Conversation, CallId: e.CallID, Name: e.Name, Tool: e.Tool, Operation: e.Operation,
			ArgumentsJson: e.Arguments, Decision: e.Decision, Rule: e.Rule, Approver: e.Approver, Outcome: e.Outcome,
			ErrorCode: e.Code, Summary: e.Summary, StartedAt: timestamppb.New(e.Started), Duration: durationpb.New(e.Duration()),
		}
		if e.ExitCode != nil {
			v := int32(*e.ExitCode)
			pe.ExitCode = &v
		}
		resp.Entries = append(resp.Entries, pe)
	}
	return resp, nil
}
