package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

type grantsOptions struct {
	conversation string
	json         bool
}

func (a *app) newGrantsCmd() *cobra.Command {
	var o grantsOptions
	cmd := &cobra.Command{
		Use:   "grants",
		Short: "List the grants approvals created; revoke one",
		Long: `List the live grants, oldest first: approvals "for this conversation" and
one-time grants of user_collaboration. Each lets matching calls of its
conversation run without asking until it expires (or, when once, until a call
used it).

--json prints the ListGrantsResponse as protojson.
'toolctl grants revoke ID' removes a grant at once.

Exit status: 0 on success, 1 when toold keeps no grants, 2 on usage errors
and when toold cannot be reached.`,
		Example: `  toolctl grants
  toolctl grants --conversation dev-1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runGrants(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.conversation, "conversation", "", "only this conversation's grants")
	f.BoolVar(&o.json, "json", false, "print the ListGrantsResponse as protojson")
	cmd.AddCommand(a.newRevokeCmd())
	return cmd
}

func (a *app) newRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a grant: later calls it covered are judged afresh",
		Long: `Revoke the grant ID (from 'toolctl grants') at once: later calls it covered
are judged afresh.

Exit status: 0 when revoked, 1 when there is no such grant (it may have
expired or been used), 2 on usage errors and when toold cannot be reached.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRevoke(cmd.Context(), args[0])
		},
	}
}

func (a *app) runGrants(ctx context.Context, o grantsOptions) error {
	mode := a.outputMode(o.json)
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewPolicyServiceClient(conn).ListGrants(ctx, &pb.ListGrantsRequest{ConversationId: o.conversation})
	if err != nil {
		return a.policyError("list grants", err)
	}
	if mode == modeJSON {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	if len(resp.GetGrants()) == 0 {
		msg := "no grants"
		if o.conversation != "" {
			msg += " in conversation " + o.conversation
		}
		fmt.Fprintln(a.stderr, msg)
		return nil
	}
	return writeGrantTable(a.stdout, resp.GetGrants(), time.Now())
}

func (a *app) runRevoke(ctx context.Context, id string) error {
	if id == "" {
		return usageError("the grant ID is empty")
	}
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := pb.NewPolicyServiceClient(conn).RevokeGrant(ctx, &pb.RevokeGrantRequest{GrantId: id}); err != nil {
		return a.policyError("revoke grant", err)
	}
	_, err = fmt.Fprintf(a.stdout, "revoked %s\n", id)
	return err
}

// writeGrantTable prints one row per grant.
func writeGrantTable(w io.Writer, grants []*pb.Grant, now time.Time) error {
	rows := [][]string{{"ID", "CONVERSATION", "SCOPE", "ONCE", "EXPIRES", "GRANTED BY"}}
	for _, g := range grants {
		once := "no"
		if g.GetOnce() {
			once = "yes"
		}
		rows = append(rows, []string{g.GetGrantId(), g.GetConversationId(), scopeText(g.GetScope()), once, expiresIn(g, now), g.GetGrantedBy()})
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			fmt.Fprintf(&line, "%-*s  ", widths[i], c)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
