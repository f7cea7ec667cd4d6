package service

import (
	"context"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/executor"
)

// PolicyServer implements the PolicyService over the executor's pipeline, a
// policy that can explain its decisions, and the grants.
type PolicyServer struct {
	pb.UnimplementedPolicyServiceServer
	x         *executor.Executor
	explainer authz.Explainer
	granter   authz.Granter
	access    *Access
	log       *slog.Logger
}

var _ pb.PolicyServiceServer = (*PolicyServer)(nil)

// NewPolicyServer returns the PolicyService of x. Explain answers
// UNIMPLEMENTED without an explainer, the grant RPCs without a granter.
// Explain is open to every client (it judges a hypothetical call and
// changes nothing), but judges with a named conversation's grants only for
// a client holding that conversation's secret or the operator credential:
// for any other client the call is judged as one of no conversation (no
// grant applies, none is returned), so that a client cannot learn what
// another conversation's person approved. A conversation's grants are
// listed and revoked only by a client holding its secret or the operator
// credential (access; nil refuses every caller), and every conversation's
// at once only by the operator.
func NewPolicyServer(x *executor.Executor, explainer authz.Explainer, granter authz.Granter, access *Access, log *slog.Logger) *PolicyServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PolicyServer{x: x, explainer: explainer, granter: granter, access: access, log: log}
}

// Explain implements pb.PolicyServiceServer.
func (p *PolicyServer) Explain(ctx context.Context, req *pb.ExplainRequest) (*pb.ExplainResponse, error) {
	if p.explainer == nil {
		return nil, status.Error(codes.Unimplemented, "the configured authorizer cannot explain decisions")
	}
	mode := authz.Stricter(p.x.Mode(), modeFromPB(req.GetApprovalMode()))
	creq := &executor.CallRequest{CallID: "explain", ConversationID: req.GetConversationId(), Name: req.GetName(), Mode: mode}
	switch a := req.GetArguments().(type) {
	case *pb.ExplainRequest_ArgumentsJson:
		creq.ArgsJSON = a.ArgumentsJson
	case *pb.ExplainRequest_ArgumentsStruct:
		creq.Args = a.ArgumentsStruct.AsMap()
	}
	resp := &pb.ExplainResponse{ApprovalMode: modeToPB(mode)}
	// The reason does not say that the grants were left out: it reaches
	// the agents of toolctl hook, and would say nothing they can act on.
	explainer := p.explainer
	if conv := creq.ConversationID; conv != "" && !p.access.Holds(ctx, conv) {
		explainer = noConversation{p.explainer}
	}
	ex := p.x.Explain(ctx, explainer, creq)
	resp.Tool, resp.Operation = ex.Tool, ex.Operation
	if ex.Err != nil {
		resp.Error = toolErrorToPB(ex.Err)
		return resp, nil
	}
	v := ex.Verdict
	resp.Decision = decisionToPB(v.Decision)
	resp.Reason, resp.Rule, resp.Risk = v.Reason, v.Rule, riskToPB(v.Risk)
	resp.Effect = effectToPB(ex.Effect, v.Summary, "", v.Commands)
	for _, s := range v.Scopes {
		resp.Scopes = append(resp.Scopes, scopeToPB(s))
	}
	if v.Grant != nil {
		resp.Grant = grantToPB(*v.Grant)
	}
	return resp, nil
}

// noConversation judges a request as one of no conversation: no grant of
// any conversation applies (PolicyServer.Explain, for a client that does
// not hold the conversation's secret).
type noConversation struct{ authz.Explainer }

// Explain implements authz.Explainer.
func (n noConversation) Explain(ctx context.Context, r *authz.Request) (authz.Verdict, error) {
	q := *r
	q.ConversationID = ""
	return n.Explainer.Explain(ctx, &q)
}

// ListGrants implements pb.PolicyServiceServer.
func (p *PolicyServer) ListGrants(ctx context.Context, req *pb.ListGrantsRequest) (*pb.ListGrantsResponse, error) {
	g := p.granter
	if g == nil {
		return nil, status.Error(codes.Unimplemented, "the configured authorizer keeps no grants")
	}
	if err := p.access.Conversation(ctx, req.GetConversationId(), "the grants"); err != nil {
		return nil, err
	}
	resp := &pb.ListGrantsResponse{}
	for _, gr := range g.Grants(req.GetConversationId()) {
		resp.Grants = append(resp.Grants, grantToPB(gr))
	}
	return resp, nil
}

// RevokeGrant implements pb.PolicyServiceServer.
func (p *PolicyServer) RevokeGrant(ctx context.Context, req *pb.RevokeGrantRequest) (*pb.RevokeGrantResponse, error) {
	g := p.granter
	if g == nil {
		return nil, status.Error(codes.Unimplemented, "the configured authorizer keeps no grants")
	}
	if !p.access.Operator(ctx) {
		// The grant's own conversation's secret may revoke it; a grant
		// that does not exist is refused the same way, so that ids cannot
		// be probed.
		conv := "(unknown)"
		for _, gr := range g.Grants("") {
			if gr.ID == req.GetGrantId() {
				conv = gr.ConversationID
			}
		}
		if err := p.access.Conversation(ctx, conv, "revoking a grant"); err != nil {
			return nil, err
		}
	}
	if !g.Revoke(req.GetGrantId()) {
		return nil, status.Errorf(codes.NotFound, "no grant %q (it may have expired or been used)", req.GetGrantId())
	}
	p.log.Info("grant revoked", "grant_id", req.GetGrantId())
	return &pb.RevokeGrantResponse{}, nil
}

func decisionToPB(d authz.Decision) pb.Decision {
	switch d {
	case authz.Allow:
		return pb.Decision_DECISION_ALLOW
	case authz.Ask:
		return pb.Decision_DECISION_ASK
	case authz.Deny:
		return pb.Decision_DECISION_DENY
	}
	return pb.Decision_DECISION_UNSPECIFIED
}

func grantToPB(g authz.Grant) *pb.Grant {
	out := &pb.Grant{
		GrantId:        g.ID,
		ConversationId: g.ConversationID,
		Scope:          scopeToPB(g.Scope),
		Once:           g.Once,
		GrantedBy:      g.GrantedBy,
	}
	if !g.CreatedAt.IsZero() {
		out.CreatedAt = timestamppb.New(g.CreatedAt)
	}
	if !g.ExpiresAt.IsZero() {
		out.ExpiresAt = timestamppb.New(g.ExpiresAt)
	}
	return out
}
