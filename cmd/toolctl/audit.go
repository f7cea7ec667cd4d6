package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	pb "github.com/toold/toold/gen/toold/v1"
)

func (a *app) newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read toold's tamper-evident audit log: tail, verify, export",
		Long: `Read toold's audit log: a hash-chained record of every decision, approval
(who answered, which scope), grant, hook verdict and call start and end
(argument and result digests, exit status). See docs/audit.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newAuditTailCmd(), a.newAuditVerifyCmd(), a.newAuditExportCmd())
	return cmd
}

func (a *app) newAuditTailCmd() *cobra.Command {
	var n int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Show the last records",
		Long: `Show the last N records, oldest first. --json prints the TailAuditResponse
as protojson.

Exit status: 0 on success, 1 when the audit log is off, 2 on usage errors
and when toold cannot be reached.`,
		Example: `  toolctl audit tail -n 50`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			mode := a.outputMode(asJSON)
			conn, err := a.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			resp, err := pb.NewAuditServiceClient(conn).Tail(ctx, &pb.TailAuditRequest{Count: int32(n)})
			if err != nil {
				return a.observeError("audit tail", err)
			}
			if mode == modeJSON {
				return a.printJSON(resp)
			}
			rows := [][]string{{"SEQ", "TIME", "KIND", "CONVERSATION", "CALL", "TOOL", "DECISION", "WHO", "DETAIL"}}
			for _, r := range resp.GetRecords() {
				tool := r.GetTool()
				if op := r.GetOperation(); op != "" && op != tool {
					tool += "." + op
				}
				decision := r.GetDecision()
				if r.GetOutcome() != "" {
					decision = r.GetOutcome()
					if r.GetCode() != "" {
						decision += " " + r.GetCode()
					} else if r.ExitCode != nil {
						decision += fmt.Sprintf(" exit %d", r.GetExitCode())
					}
				}
				detail := r.GetDetail()
				if detail == "" {
					detail = r.GetScope()
				}
				rows = append(rows, []string{fmt.Sprint(r.GetSeq()), r.GetTime().AsTime().Local().Format("2006-01-02 15:04:05"),
					r.GetKind(), r.GetConversationId(), r.GetCallId(), tool, decision, r.GetWho(), oneLine(detail, 60)})
			}
			return writeTable(a.stdout, rows)
		},
	}
	cmd.Flags().IntVarP(&n, "count", "n", 20, "how many records (1 to 10000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the TailAuditResponse as protojson")
	return cmd
}

func (a *app) newAuditVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the chain; name the first record edited, removed, reordered or truncated",
		Long: `Have toold read its whole audit log and check the chain: every record carries
the SHA-256 of the one before, sequence numbers run on by one across files,
and the log reaches the last record toold knows it fsynced.

Exit status: 0 when the chain holds, 1 when it does not (the first record
edited, removed, reordered or truncated is named) or the audit log is off,
2 on usage errors and when toold cannot be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			conn, err := a.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			v, err := pb.NewAuditServiceClient(conn).Verify(ctx, &pb.VerifyAuditRequest{})
			if err != nil {
				return a.observeError("audit verify", err)
			}
			if !v.GetOk() {
				return &exitError{code: exitFailure, err: fmt.Errorf("audit log %s at record %d (%s line %d): %s",
					v.GetProblem(), v.GetProblemSeq(), v.GetProblemFile(), v.GetProblemLine(), v.GetDetail())}
			}
			if _, err := fmt.Fprintf(a.stdout, "ok: %d records in %d files, chained through record %d\n", v.GetRecords(), v.GetFiles(), v.GetLastSeq()); err != nil {
				return err
			}
			if v.GetPruned() != "" {
				_, err = fmt.Fprintf(a.stdout, "records 1 to %d were pruned by retention (%s)\n", v.GetFirstSeq()-1, v.GetPruned())
			}
			return err
		},
	}
}

func (a *app) newAuditExportCmd() *cobra.Command {
	var from uint64
	var since, until string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the records as JSON lines, as stored",
		Long: `Write the audit records to stdout as JSON lines, byte for byte as stored,
so that the chain can be checked on the copy (each line's SHA-256 is the
next line's "prev").

Exit status: 0 on success, 1 when the audit log is off, 2 on usage errors
and when toold cannot be reached.`,
		Example: `  toolctl audit export > audit.jsonl
  toolctl audit export --since 24h --from 1000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			now := time.Now()
			s, err := parseWhen("since", since, now)
			if err != nil {
				return err
			}
			u, err := parseWhen("until", until, now)
			if err != nil {
				return err
			}
			return a.runAuditExport(ctx, &pb.ExportAuditRequest{FromSeq: from, Since: s, Until: u})
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&from, "from", 0, "only records with this sequence number or later")
	f.StringVar(&since, "since", "", "only records appended at or after this time (RFC 3339, or a duration ago)")
	f.StringVar(&until, "until", "", "only records appended before this time (RFC 3339, or a duration ago)")
	return cmd
}

func (a *app) runAuditExport(ctx context.Context, req *pb.ExportAuditRequest) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := pb.NewAuditServiceClient(conn).Export(ctx, req)
	if err != nil {
		return a.observeError("audit export", err)
	}
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return a.observeError("audit export", err)
		}
		if _, err := a.stdout.Write(chunk.GetJsonl()); err != nil {
			return err
		}
	}
}
