package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/executor"
)

// Calls in the 2026-07-28 era. A server no longer sends requests to the
// client during a call; a call that needs the person (an approval, a
// tool's question) ends its round with an input-required result — the
// elicitation to show and an opaque requestState — and the client calls
// again with the answer. toold's calls wait for answers in place, so such a
// call is parked between rounds: it keeps running in toold, its question
// pending, under a random requestState that only the client holding it
// can name. The next round delivers the answer and waits for the call's
// end or its next question. A call whose client does not come back within
// roundTimeout is canceled (its approval denied), and Close cancels every
// parked call.

// roundTimeout bounds how long a parked call waits for the client's next
// round.
const roundTimeout = 10 * time.Minute

// inputKey is the id of toold's one input request per round.
const inputKey = "toold"

// parkedCall is a call running between a 2026-07-28 client's rounds.
type parkedCall struct {
	id      string
	host    *host
	cancel  context.CancelCauseFunc
	asks    chan *sdk.ElicitParams // the call's next question
	answers chan *sdk.ElicitResult // the client's answer to it
	end     chan *events.End       // the call's end, once
	mu      sync.Mutex
	pending *sdk.ElicitParams // the question the client was shown, if any
	expiry  *time.Timer
}

// rounds holds a Server's parked calls.
type rounds struct {
	mu    sync.Mutex
	calls map[string]*parkedCall
}

func (r *rounds) get(id string) *parkedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}

func (r *rounds) remove(p *parkedCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.calls, p.id)
	p.expiry.Stop()
}

// closeAll cancels every parked call.
func (r *rounds) closeAll() {
	r.mu.Lock()
	calls := r.calls
	r.calls = map[string]*parkedCall{}
	r.mu.Unlock()
	for _, p := range calls {
		p.expiry.Stop()
		p.cancel(errdefs.New(errdefs.ErrCanceled, "toold is shutting down"))
	}
}

// newRoundsCall starts the call in the background, detached from the
// request (which ends when the call asks for input), and parks it.
func (s *Server) newRoundsCall(creq *executor.CallRequest, h *host) *parkedCall {
	ctx, cancel := context.WithCancelCause(context.Background())
	p := &parkedCall{
		id:      newID("toold-call-"),
		host:    h,
		cancel:  cancel,
		asks:    make(chan *sdk.ElicitParams),
		answers: make(chan *sdk.ElicitResult),
		end:     make(chan *events.End, 1),
	}
	p.expiry = time.AfterFunc(roundTimeout, func() {
		s.rounds.remove(p)
		cancel(errdefs.New(errdefs.ErrDenied, "the MCP client did not answer toold's input request within %s, so the call was not run", roundTimeout))
	})
	h.elicit = func(ctx context.Context, q *sdk.ElicitParams) (*sdk.ElicitResult, error) {
		select {
		case p.asks <- q:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		select {
		case a := <-p.answers:
			return a, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	s.rounds.mu.Lock()
	s.rounds.calls[p.id] = p
	s.rounds.mu.Unlock()
	go func() {
		defer cancel(nil)
		p.end <- s.opts.Executor.Run(ctx, creq, h)
	}()
	return p
}

// round waits, for one request of the client, until the parked call ends
// (its result) or asks for input (an input-required result carrying the
// question). When the request itself ends first (the client canceled it or
// went away), the call is canceled.
func (s *Server) round(ctx context.Context, p *parkedCall) (*sdk.CallToolResult, error) {
	p.expiry.Stop()
	select {
	case end := <-p.end:
		s.rounds.remove(p)
		return p.host.withTrace(toResult(end)), nil
	case q := <-p.asks:
		p.mu.Lock()
		p.pending = q
		p.mu.Unlock()
		p.expiry.Reset(roundTimeout)
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{inputKey: q}, RequestState: p.id}, nil
	case <-ctx.Done():
		s.rounds.remove(p)
		p.cancel(errdefs.New(errdefs.ErrCanceled, "the MCP client canceled the call"))
		return p.host.withTrace(toResult(<-p.end)), nil
	}
}

// resume is a client's next round of a parked call: it delivers the answer
// to the pending question and waits as round does. A requestState toold
// did not hand out (or whose call ended or expired) is an invalid-params
// error; a round without the answer shows the question again.
func (s *Server) resume(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	p := s.rounds.get(req.Params.RequestState)
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState names no call waiting for input at this toold (unknown, ended, or expired after " + roundTimeout.String() + "); call the tool again"}
	}
	p.host.setSession(req.Session, req.Params.GetProgressToken())
	p.mu.Lock()
	q := p.pending
	p.mu.Unlock()
	if q != nil {
		a, _ := req.Params.InputResponses[inputKey].(*sdk.ElicitResult)
		if a == nil {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{inputKey: q}, RequestState: p.id}, nil
		}
		p.mu.Lock()
		p.pending = nil
		p.mu.Unlock()
		select {
		case p.answers <- a:
		case end := <-p.end:
			s.rounds.remove(p)
			return p.host.withTrace(toResult(end)), nil
		}
	}
	return s.round(ctx, p)
}

// isNewEra reports whether a request follows the 2026-07-28 protocol.
func isNewEra(req *sdk.CallToolRequest) bool {
	return req.ProtocolVersion() >= "2026-07-28"
}
