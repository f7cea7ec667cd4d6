package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

// approvalModes maps --mode values to approval modes.
var approvalModes = map[string]pb.ApprovalMode{
	"yolo": pb.ApprovalMode_APPROVAL_MODE_YOLO,
	"auto": pb.ApprovalMode_APPROVAL_MODE_AUTO,
	"ask":  pb.ApprovalMode_APPROVAL_MODE_ASK,
}

type explainOptions struct {
	name         string
	args         string // --args: JSON object text, or "-" for stdin
	argsSet      bool
	pairs        []string // key=value and key:=JSON
	conversation string
	mode         string
	json         bool
}

func (a *app) newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Ask toold why it allows, asks about or denies a call",
		Long: `Ask toold's policy about calls without running them. See also 'toolctl
grants' for the grants approvals created.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newExplainCmd())
	return cmd
}

func (a *app) newExplainCmd() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain NAME [key=value | key:=JSON ...]",
		Short: "Say how toold would decide a call, and why",
		Long: `Say how toold would decide a call right now, without running it and without
side effects (no grant is used up): the decision (allow, ask or deny), the
reason and the rule, the risk, the tool and operation NAME resolves to, what
the call would do (paths, the command and its parsed sub-commands, each with
its own decision and rule), the scopes a person would be offered, and the
grant that would allow it.

NAME and the arguments are given as for 'toolctl call'. --conversation
judges the call in that conversation, with its grants; --mode judges it in a
stricter approval mode than toold's (a looser one is not applied).

--json prints the ExplainResponse as protojson.

Exit status: 0 whatever the decision, 1 when toold cannot resolve or validate
the call (the error is printed) or cannot explain, 2 on usage errors and when
toold cannot be reached.`,
		Example: `  toolctl policy explain run_command command='git push origin main'
  toolctl policy explain write_file path=src/main.go content=x --mode ask
  toolctl policy explain read_file path=/etc/passwd --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name, o.pairs = args[0], args[1:]
			o.argsSet = cmd.Flags().Changed("args")
			return a.runExplain(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.args, "args", "", "arguments as a JSON object; - reads it from stdin")
	f.StringVar(&o.conversation, "conversation", "", "judge the call in this conversation, with its grants")
	f.StringVar(&o.mode, "mode", "", "judge the call in approval mode yolo, auto or ask (default: toold's)")
	f.BoolVar(&o.json, "json", false, "print the ExplainResponse as protojson")
	return cmd
}

func (a *app) runExplain(ctx context.Context, o explainOptions) error {
	if o.name == "" {
		return usageError("the tool NAME is empty")
	}
	req := &pb.ExplainRequest{Name: o.name, ConversationId: o.conversation}
	if o.mode != "" {
		m, ok := approvalModes[strings.ToLower(o.mode)]
		if !ok {
			return usageError("--mode %q: want yolo, auto or ask", o.mode)
		}
		req.ApprovalMode = m
	}
	args, err := buildArguments(o.args, o.argsSet, o.pairs, a.stdin)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if args != "" {
		req.Arguments = &pb.ExplainRequest_ArgumentsJson{ArgumentsJson: args}
	}
	mode := a.outputMode(o.json)

	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewPolicyServiceClient(conn).Explain(ctx, req)
	if err != nil {
		return a.policyError("explain", err)
	}
	if mode == modeJSON {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		if _, err := fmt.Fprintf(a.stdout, "%s\n", b); err != nil {
			return err
		}
	} else if _, err := io.WriteString(a.stdout, explainText(resp, a.styleFor(a.stdout), time.Now())); err != nil {
		return err
	}
	if e := resp.GetError(); e != nil {
		writeToolError(a.stderr, e)
		return &exitError{code: exitFailure}
	}
	return nil
}

// explainText writes an ExplainResponse for people, one labelled line per
// part that is set.
func explainText(r *pb.ExplainResponse, st style, now time.Time) string {
	var b strings.Builder
	field := fieldWriter(&b, "")
	if d := r.GetDecision(); d != pb.Decision_DECISION_UNSPECIFIED {
		field("decision", st.paint(ansiBold, st.decision(decisionName(d)))+" ("+st.risk(r.GetRisk())+")")
	}
	field("reason", r.GetReason())
	field("rule", r.GetRule())
	field("tool", toolOp(r.GetTool(), r.GetOperation()))
	if m := r.GetApprovalMode(); m != pb.ApprovalMode_APPROVAL_MODE_UNSPECIFIED {
		field("mode", strings.ToLower(strings.TrimPrefix(m.String(), "APPROVAL_MODE_")))
	}
	field("summary", r.GetEffect().GetSummary())
	writeEffect(&b, r.GetEffect(), st, "", maxDiffLines)
	for i, s := range r.GetScopes() {
		label := ""
		if i == 0 {
			label = "offers"
		}
		kind := "once"
		if s.GetKind() == pb.ApprovalScope_KIND_CONVERSATION {
			kind = "for the conversation"
		}
		fmt.Fprintf(&b, "%-*s%s: %s\n", labelWidth, label+strings.Repeat(":", min(len(label), 1)), kind, scopeText(s))
	}
	if g := r.GetGrant(); g != nil {
		field("grant", grantText(g, now))
	}
	return b.String()
}

// grantText says in one line which grant applies and until when.
func grantText(g *pb.Grant, now time.Time) string {
	s := fmt.Sprintf("%s in conversation %s: %s", g.GetGrantId(), g.GetConversationId(), scopeText(g.GetScope()))
	if g.GetOnce() {
		s += " (once)"
	}
	if by := g.GetGrantedBy(); by != "" {
		s += ", granted by " + by
	}
	return s + ", expires " + expiresIn(g, now)
}

// expiresIn says when a grant expires: "in 4m59s", "never".
func expiresIn(g *pb.Grant, now time.Time) string {
	if g.GetExpiresAt() == nil {
		return "never"
	}
	d := g.GetExpiresAt().AsTime().Sub(now)
	if d <= 0 {
		return "now"
	}
	return "in " + d.Round(time.Second).String()
}

// decisionName is "allow", "ask", "deny" or "undecided".
func decisionName(d pb.Decision) string {
	switch d {
	case pb.Decision_DECISION_ALLOW:
		return "allow"
	case pb.Decision_DECISION_ASK:
		return "ask"
	case pb.Decision_DECISION_DENY:
		return "deny"
	}
	return "undecided"
}

// toolOp names a resolved operation: "file_operations.read_file", or the
// tool alone when its operation has its name.
func toolOp(tool, op string) string {
	if op == "" || op == tool {
		return tool
	}
	return tool + "." + op
}

// policyError turns a failed PolicyService RPC into an exit: an unknown
// grant and a toold whose policy cannot explain or keep grants exit 1, the
// rest as rpcError says.
func (a *app) policyError(what string, err error) error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.NotFound:
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", what, st.Message())}
	case codes.Unimplemented:
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: toold at %s cannot: %s", what, a.where(), st.Message())}
	}
	return a.rpcError(what, err)
}
