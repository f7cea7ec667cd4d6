package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
)

type rewindOptions struct {
	dryRun, force, json bool
	secret              string
}

func (a *app) newRewindCmd() *cobra.Command {
	var o rewindOptions
	cmd := &cobra.Command{
		Use:   "rewind CONVERSATION CALL",
		Short: "Undo what a conversation's calls changed in the workspace, back to before CALL",
		Long: `Rewind the workspace to what it was before the call CALL of the
conversation CONVERSATION: that call's changes and those of the
conversation's later calls (file edits, patches, commands) are undone,
newest first. toold records what every call that may change the workspace
changed (see toolctl history --changes and docs/rewind.md).

A path changed since by anything outside the conversation (a person, another
conversation, a background process after its call ended) is a conflict: it
is reported and left alone; the other paths are restored. --force restores
the conflicting paths too, overwriting those changes. --dry-run shows what
would be done and changes nothing.

Exit status: 0 when every path was restored (or, with --dry-run, would be),
1 when paths were left alone or failed, or when toold has no such record
(checkpoints off, an unknown call, a record dropped to keep the store within
its bounds), 2 on usage errors and when toold cannot be reached.`,
		Example: `  toolctl rewind dev-1 call-7 --dry-run
  toolctl rewind dev-1 call-7
  toolctl rewind dev-1 call-7 --force`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runRewind(cmd.Context(), args[0], args[1], o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "show what would be done; change nothing")
	f.BoolVar(&o.force, "force", false, "restore paths changed outside the conversation too, overwriting those changes")
	f.BoolVar(&o.json, "json", false, "print the RewindResponse as protojson")
	f.StringVar(&o.secret, "secret", "", "the conversation's secret (default: the operator credential)")
	return cmd
}

func (a *app) runRewind(ctx context.Context, conv, call string, o rewindOptions) error {
	mode := a.outputMode(o.json)
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewCheckpointServiceClient(conn).Rewind(a.withSecret(ctx, conv, o.secret), &pb.RewindRequest{
		ConversationId: conv, CallId: call, DryRun: o.dryRun, Force: o.force,
	})
	if err != nil {
		return a.checkpointError("rewind", err)
	}
	if mode == modeJSON {
		if err := a.printJSON(resp); err != nil {
			return err
		}
	} else {
		verb := "undid"
		if o.dryRun {
			verb = "would undo"
		}
		fmt.Fprintf(a.stdout, "%s calls %s (newest first)\n", verb, strings.Join(resp.GetUndoneCallIds(), ", "))
		rows := [][]string{{"PATH", "ACTION", "NOW", "BACK TO", "RESULT"}}
		for _, act := range resp.GetActions() {
			result := ""
			switch {
			case act.GetConflict() != "":
				result = "left alone: " + act.GetConflict()
			case act.GetError() != "":
				result = "failed: " + act.GetError()
			case act.GetDone():
				result = "restored"
			case o.dryRun && act.GetOp() != "none":
				result = "would restore"
			}
			rows = append(rows, []string{act.GetPath(), act.GetOp(), stateLine(act.GetCurrent()), stateLine(act.GetTarget()), result})
		}
		if err := writeTable(a.stdout, rows); err != nil {
			return err
		}
	}
	if resp.GetConflicts() > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("rewind: %d paths left alone or failed; --force restores conflicting paths", resp.GetConflicts())}
	}
	return nil
}

// stateLine is a PathState in a few words.
func stateLine(s *pb.PathState) string {
	switch s.GetKind() {
	case "file":
		return fmt.Sprintf("file %04o %dB", s.GetMode(), s.GetSize())
	case "dir":
		return fmt.Sprintf("dir %04o", s.GetMode())
	case "symlink":
		return "symlink → " + s.GetTarget()
	}
	return s.GetKind()
}

// checkpointError maps the CheckpointService's errors: no record, a
// dropped record or checkpoints off is exit 1.
func (a *app) checkpointError(what string, err error) error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.NotFound, codes.FailedPrecondition, codes.Unavailable:
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", what, st.Message())}
	case codes.InvalidArgument:
		return usageError("%s: %s", what, st.Message())
	}
	return a.rpcError(what, err)
}

// changeMarks summarizes a call's changes: "M a.txt, A b/, D c.txt".
func changeMarks(c *pb.CallChanges) string {
	var parts []string
	for _, ch := range c.GetChanges() {
		mark := "M"
		switch {
		case ch.GetBefore().GetKind() == "absent":
			mark = "A"
		case ch.GetAfter().GetKind() == "absent":
			mark = "D"
		case ch.GetBefore().GetKind() == ch.GetAfter().GetKind() && ch.GetBefore().GetSha256() == ch.GetAfter().GetSha256() &&
			ch.GetBefore().GetTarget() == ch.GetAfter().GetTarget():
			mark = "chmod"
		}
		p := ch.GetPath()
		if ch.GetAfter().GetKind() == "dir" || (ch.GetAfter().GetKind() == "absent" && ch.GetBefore().GetKind() == "dir") {
			p += "/"
		}
		parts = append(parts, mark+" "+p)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
