package service

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

// PolicyServer implements the PolicyService over the executor's pipeline
// and an authorizer that can explain and keep grants.
type PolicyServer struct {
	pb.UnimplementedPolicyServiceServer
	srv *Server
}

var _ pb.PolicyServiceServer = (*PolicyServer)(nil)

// NewPolicyServer returns the PolicyService of srv. Explain needs the
// server's authorizer to be an authz.Explainer and the grant RPCs an
// authz.Granter; otherwise they answer UNIMPLEMENTED.
func NewPolicyServer(srv *Server) *PolicyServer { return &PolicyServer{srv: srv} }

// Explain implements pb.PolicyServiceServer.
func (p *PolicyServer) Explain(ctx context.Context, req *pb.ExplainRequest) (*pb.ExplainResponse, error) {
	ex, ok := p.srv.cfg.Authorizer.(authz.Explainer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the configured authorizer cannot explain decisions")
	}
	mode := authz.Stricter(p.srv.cfg.Mode, modeFromPB(req.GetApprovalMode()))
	creq := &CallRequest{CallID: "explain", ConversationID: req.GetConversationId(), Name: req.GetName(), Mode: mode}
	switch a := req.GetArguments().(type) {
	case *pb.ExplainRequest_ArgumentsJson:
		creq.ArgsJSON = a.ArgumentsJson
	case *pb.ExplainRequest_ArgumentsStruct:
		creq.Args = a.ArgumentsStruct.AsMap()
	}
	resp := &pb.ExplainResponse{ApprovalMode: modeToPB(mode)}
	target, call, _, err := p.srv.exec.prepare(ctx, creq)
	if target != nil {
		resp.Tool, resp.Operation = target.ToolName, target.Operation
	}
	var effect tools.Effect
	if err == nil {
		effect, err = describe(target.Tool, call)
	}
	if err != nil {
		resp.Error = toolErrorToPB(err)
		return resp, nil
	}
	risk := target.Risk
	if effect.Risk != tools.RiskUnknown {
		risk = effect.Risk
	}
	v, err := ex.Explain(ctx, &authz.Request{
		ConversationID: creq.ConversationID, CallID: creq.CallID, Mode: mode,
		Tool: target.ToolName, Operation: target.Operation, Args: call.Args, Effect: effect, Risk: risk,
	})
	if err != nil {
		resp.Error = toolErrorToPB(err)
		return resp, nil
	}
	resp.Decision = decisionToPB(v.Decision)
	resp.Reason, resp.Rule, resp.Risk = v.Reason, v.Rule, riskToPB(v.Risk)
	resp.Effect = effectToPB(effect, v.Summary, "", v.Commands)
	for _, s := range v.Scopes {
		resp.Scopes = append(resp.Scopes, scopeToPB(s))
	}
	if v.Grant != nil {
		resp.Grant = grantToPB(*v.Grant)
	}
	return resp, nil
}

// ListGrants implements pb.PolicyServiceServer.
func (p *PolicyServer) ListGrants(_ context.Context, req *pb.ListGrantsRequest) (*pb.ListGrantsResponse, error) {
	g, ok := p.srv.cfg.Authorizer.(authz.Granter)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the configured authorizer keeps no grants")
	}
	resp := &pb.ListGrantsResponse{}
	for _, gr := range g.Grants(req.GetConversationId()) {
		resp.Grants = append(resp.Grants, grantToPB(gr))
	}
	return resp, nil
}

// RevokeGrant implements pb.PolicyServiceServer.
func (p *PolicyServer) RevokeGrant(_ context.Context, req *pb.RevokeGrantRequest) (*pb.RevokeGrantResponse, error) {
	g, ok := p.srv.cfg.Authorizer.(authz.Granter)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the configured authorizer keeps no grants")
	}
	if !g.Revoke(req.GetGrantId()) {
		return nil, status.Errorf(codes.NotFound, "no grant %q (it may have expired or been used)", req.GetGrantId())
	}
	p.srv.cfg.Logger.Info("grant revoked", "grant_id", req.GetGrantId())
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
