package service

import (
	"bytes"
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/audit"
)

// AuditServer implements the AuditService over the audit log's directory.
type AuditServer struct {
	pb.UnimplementedAuditServiceServer
	dir    string
	off    error
	access *Access
	flush  func(context.Context) error
}

var _ pb.AuditServiceServer = (*AuditServer)(nil)

// NewAuditServer returns the AuditService reading the log in dir; with dir
// empty (the audit log is off, or could not be opened: off says why) every
// RPC fails UNAVAILABLE. The audit log holds every conversation's records:
// every RPC needs the operator credential (access; nil: nobody). flush,
// when not nil, runs before every read: it puts the records of the calls
// that ended so far into the files (the executor records a call after its
// End, and the audit log writes queued records in batches), so that a
// client that had a call's End finds its records. A context that ends
// while it waits ends the RPC with the context's code.
func NewAuditServer(dir string, off error, access *Access, flush func(context.Context) error) *AuditServer {
	return &AuditServer{dir: dir, off: off, access: access, flush: flush}
}

func (a *AuditServer) check(ctx context.Context) error {
	if err := a.access.RequireOperator(ctx, "the audit log"); err != nil {
		return err
	}
	if a.dir == "" {
		msg := "the audit log is not available"
		if a.off != nil {
			msg = a.off.Error()
		}
		return status.Error(codes.Unavailable, msg)
	}
	if a.flush != nil {
		if err := a.flush(ctx); err != nil {
			return status.FromContextError(err).Err()
		}
	}
	return nil
}

// Tail implements pb.AuditServiceServer.
func (a *AuditServer) Tail(ctx context.Context, req *pb.TailAuditRequest) (*pb.TailAuditResponse, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	n := int(req.GetCount())
	switch {
	case n == 0:
		n = 20
	case n < 0 || n > 10000:
		return nil, status.Errorf(codes.InvalidArgument, "count %d: want 1 to 10000 (0: 20)", n)
	}
	recs, err := audit.Tail(a.dir, n)
	if err != nil {
		return nil, status.Error(codes.Internal, "reading the audit log: "+err.Error())
	}
	resp := &pb.TailAuditResponse{}
	for _, r := range recs {
		resp.Records = append(resp.Records, auditRecordToPB(r))
	}
	return resp, nil
}

func auditRecordToPB(r audit.Record) *pb.AuditRecord {
	p := &pb.AuditRecord{
		Seq: r.Seq, Time: timestamppb.New(r.Time), Kind: r.Kind, ConversationId: r.Conversation, CallId: r.CallID,
		Tool: r.Tool, Operation: r.Operation, Decision: r.Decision, Rule: r.Rule, Who: r.Who, Scope: r.Scope,
		GrantId: r.GrantID, ArgsDigest: r.ArgsDigest, ResultDigest: r.ResultDigest, Outcome: r.Outcome,
		Code: r.Code, Detail: r.Detail, Prev: r.Prev,
	}
	if r.ExitCode != nil {
		v := int32(*r.ExitCode)
		p.ExitCode = &v
	}
	return p
}

// Verify implements pb.AuditServiceServer.
func (a *AuditServer) Verify(ctx context.Context, _ *pb.VerifyAuditRequest) (*pb.VerifyAuditResponse, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	rep, err := audit.Verify(a.dir)
	resp := &pb.VerifyAuditResponse{Ok: err == nil, Records: rep.Records, Files: int32(rep.Files), LastSeq: rep.Last, FirstSeq: rep.First}
	if p := rep.Pruned; p != nil {
		resp.Pruned = p.Time.Format(time.RFC3339) + ": " + p.Detail
	}
	var te *audit.TamperError
	switch {
	case errors.As(err, &te):
		resp.Problem, resp.ProblemSeq, resp.ProblemFile, resp.ProblemLine, resp.Detail = te.Kind, te.Seq, te.File, int32(te.Line), te.Detail
	case err != nil:
		return nil, status.Error(codes.Internal, "reading the audit log: "+err.Error())
	}
	return resp, nil
}

// exportChunk is how many bytes of JSON lines one ExportAuditResponse
// carries (at least one whole line).
const exportChunk = 256 << 10

// Export implements pb.AuditServiceServer.
func (a *AuditServer) Export(req *pb.ExportAuditRequest, stream grpc.ServerStreamingServer[pb.ExportAuditResponse]) error {
	if err := a.check(stream.Context()); err != nil {
		return err
	}
	var since, until time.Time
	if req.Since != nil {
		since = req.GetSince().AsTime()
	}
	if req.Until != nil {
		until = req.GetUntil().AsTime()
	}
	w := &chunkWriter{send: func(b []byte) error { return stream.Send(&pb.ExportAuditResponse{Jsonl: b}) }}
	if _, err := audit.Export(stream.Context(), a.dir, w, req.GetFromSeq(), since, until); err != nil {
		if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
			return err
		}
		if ctxErr := stream.Context().Err(); ctxErr != nil {
			return status.FromContextError(ctxErr).Err()
		}
		return status.Error(codes.Internal, "reading the audit log: "+err.Error())
	}
	return w.flush()
}

// chunkWriter gathers whole lines into chunks of about exportChunk bytes.
type chunkWriter struct {
	buf  bytes.Buffer
	send func([]byte) error
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if c.buf.Len() >= exportChunk {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *chunkWriter) flush() error {
	if c.buf.Len() == 0 {
		return nil
	}
	b := bytes.Clone(c.buf.Bytes())
	c.buf.Reset()
	return c.send(b)
}
