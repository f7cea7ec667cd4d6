package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/toold/toold/gen/toold/v1"
)

type historyOptions struct {
	conversation, tool, outcome string
	since, until                string
	limit                       int
	beforeID                    int64
	json                        bool
	changes                     bool
}

func (a *app) newHistoryCmd() *cobra.Command {
	var o historyOptions
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the calls toold ran: name, arguments, decision, outcome, timing",
		Long: `Show the calls toold ran, newest first, from its history (kept across
restarts within history.max_age and history.max_entries): when each started,
the conversation, the call, the tool, the decision, the outcome (with the
error code or exit status), how long it took, and the start of the result.

--since and --until take RFC 3339 times or durations back from now ("1h").
--json prints the QueryHistoryResponse as protojson (with the arguments).

Exit status: 0 on success, 1 when toold keeps no history, 2 on usage errors
and when toold cannot be reached.`,
		Example: `  toolctl history
  toolctl history --conversation dev-1 --tool run_command --outcome error
  toolctl history --since 2h --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runHistory(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.conversation, "conversation", "", "only this conversation's calls")
	f.StringVar(&o.tool, "tool", "", "only calls of this tool (flat name, tool, or tool.operation)")
	f.StringVar(&o.outcome, "outcome", "", "only calls that ended so: success or error")
	f.StringVar(&o.since, "since", "", "only calls started at or after this time (RFC 3339, or a duration ago)")
	f.StringVar(&o.until, "until", "", "only calls started before this time (RFC 3339, or a duration ago)")
	f.IntVar(&o.limit, "limit", 50, "at most this many calls (1 to 1000)")
	f.Int64Var(&o.beforeID, "before", 0, "only calls older than this entry id (to page on)")
	f.BoolVar(&o.json, "json", false, "print the QueryHistoryResponse as protojson")
	f.BoolVar(&o.changes, "changes", false, "with --conversation: add what each call changed in the workspace (A added, M modified, D deleted; toolctl rewind undoes it)")
	return cmd
}

// parseWhen reads an RFC 3339 time or a duration before now.
func parseWhen(flag, s string, now time.Time) (*timestamppb.Timestamp, error) {
	if s == "" {
		return nil, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return timestamppb.New(now.Add(-d)), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, usageError("--%s %q: want an RFC 3339 time (2026-11-24T10:00:00Z) or a duration ago (90m)", flag, s)
	}
	return timestamppb.New(t), nil
}

func (a *app) runHistory(ctx context.Context, o historyOptions) error {
	now := time.Now()
	since, err := parseWhen("since", o.since, now)
	if err != nil {
		return err
	}
	until, err := parseWhen("until", o.until, now)
	if err != nil {
		return err
	}
	mode := a.outputMode(o.json)
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewHistoryServiceClient(conn).Query(a.withSecret(ctx, o.conversation, ""), &pb.QueryHistoryRequest{
		ConversationId: o.conversation, Tool: o.tool, Outcome: o.outcome, Since: since, Until: until,
		Limit: int32(o.limit), BeforeId: o.beforeID,
	})
	if err != nil {
		return a.observeError("history", err)
	}
	if mode == modeJSON {
		return a.printJSON(resp)
	}
	var changes map[string]*pb.CallChanges
	if o.changes {
		if o.conversation == "" {
			return usageError("history --changes needs --conversation")
		}
		cr, err := pb.NewCheckpointServiceClient(conn).Changes(a.withSecret(ctx, o.conversation, ""), &pb.ChangesRequest{ConversationId: o.conversation})
		if err != nil {
			return a.checkpointError("history --changes", err)
		}
		changes = map[string]*pb.CallChanges{}
		for _, c := range cr.GetCalls() {
			changes[c.GetCallId()] = c
		}
	}
	if len(resp.GetEntries()) == 0 {
		fmt.Fprintln(a.stderr, "no calls")
		return nil
	}
	rows := [][]string{{"ID", "STARTED", "CONVERSATION", "CALL", "TOOL", "DECISION", "OUTCOME", "DURATION", "RESULT"}}
	if changes != nil {
		rows[0] = append(rows[0], "CHANGES")
	}
	for _, e := range resp.GetEntries() {
		tool := e.GetTool()
		if op := e.GetOperation(); op != "" && op != tool {
			tool += "." + op
		}
		outcome := e.GetOutcome()
		switch {
		case e.GetErrorCode() != "":
			outcome += " " + e.GetErrorCode()
		case e.ExitCode != nil:
			outcome += fmt.Sprintf(" exit %d", e.GetExitCode())
		}
		rows = append(rows, []string{fmt.Sprint(e.GetId()), e.GetStartedAt().AsTime().Local().Format("2006-01-02 15:04:05"),
			e.GetConversationId(), e.GetCallId(), tool, e.GetDecision(), outcome,
			e.GetDuration().AsDuration().Round(time.Millisecond).String(), oneLine(e.GetSummary(), 60)})
		if changes != nil {
			c := "-"
			if cc, ok := changes[e.GetCallId()]; ok {
				c = oneLine(changeMarks(cc), 80)
			}
			rows[len(rows)-1] = append(rows[len(rows)-1], c)
		}
	}
	return writeTable(a.stdout, rows)
}

// oneLine squeezes s onto one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return s
}

func (a *app) printJSON(m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// observeError maps the errors of the history and audit RPCs: history
// or audit turned off is exit 1, a bad filter a usage error.
func (a *app) observeError(what string, err error) error {
	st := status.Convert(err)
	switch {
	case st.Code() == codes.Unavailable && (strings.Contains(st.Message(), "turned off") || strings.Contains(st.Message(), "not available") || strings.Contains(st.Message(), "could not be opened")):
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", what, st.Message())}
	case st.Code() == codes.InvalidArgument:
		return usageError("%s: %s", what, st.Message())
	}
	return a.rpcError(what, err)
}

// writeTable prints rows as aligned columns; the first is the header.
func writeTable(w io.Writer, rows [][]string) error {
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
