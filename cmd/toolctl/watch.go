package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

type watchOptions struct {
	conversation string
	flat         bool
	coalesce     time.Duration
	maxDirs      uint32
	json         bool
}

func (a *app) newWatchCmd() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch [PATH]",
		Short: "Show files created, changed and removed under a workspace directory, live",
		Long: `Watch a directory of toold's workspace (default: the whole workspace) and
print each file created, changed or removed below it, until Ctrl-C or until
toold stops. Changes within --coalesce are merged per path; what .gitignore
ignores is not shown (nor .git). A rename shows as the old path removed and
the new one created.

The watch is judged like reading the directory: a path outside the
workspace, or one toold's policy denies or would ask about, is refused.

Output: one line per change, "created src/a.go", "changed src/a.go",
"removed src/a.go" (a directory ends in /); notices on stderr. --json
prints one WatchResponse per line.

Exit status: 0 when the watch ends (Ctrl-C, toold stopping, the directory
removed), 1 when the watch is refused, 2 on usage errors and when toold
cannot be reached.`,
		Example: `  toolctl watch
  toolctl watch src --coalesce 500ms`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := ""
			if len(args) == 1 {
				p = args[0]
			}
			return a.watch(cmd.Context(), p, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.conversation, "conversation", "", "judge the watch in this conversation (present its secret with --secret)")
	f.BoolVar(&o.flat, "flat", false, "watch the directory only, not the ones below it")
	f.DurationVar(&o.coalesce, "coalesce", 100*time.Millisecond, "merge the changes of a path within this window")
	f.Uint32Var(&o.maxDirs, "max-directories", 0, "watch at most this many directories (default 4096)")
	f.BoolVar(&o.json, "json", false, "print protojson, one WatchResponse per line")
	return cmd
}

var changeWords = map[pb.FileChangeKind]string{
	pb.FileChangeKind_FILE_CHANGE_KIND_CREATED: "created",
	pb.FileChangeKind_FILE_CHANGE_KIND_CHANGED: "changed",
	pb.FileChangeKind_FILE_CHANGE_KIND_REMOVED: "removed",
}

func (a *app) watch(ctx context.Context, p string, o watchOptions) error {
	if o.coalesce < 0 || o.coalesce > 10*time.Second {
		return &exitError{code: exitUsage, err: fmt.Errorf("--coalesce %s: want 0 to 10s", o.coalesce)}
	}
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := pb.NewWorkspaceServiceClient(conn).Watch(a.withSecret(ctx, o.conversation, ""), &pb.WatchRequest{
		Path: p, Recursive: !o.flat, ConversationId: o.conversation, CoalesceMs: uint32(o.coalesce.Milliseconds()), MaxDirectories: o.maxDirs})
	if err != nil {
		return a.watchError(err)
	}
	json := a.outputMode(o.json) == modeJSON
	for {
		r, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			fmt.Fprintln(a.stderr, "the watch ended")
			return nil
		case err != nil && ctx.Err() != nil:
			return nil // Ctrl-C
		case err != nil:
			return a.watchError(err)
		}
		if json {
			b, err := protojson.Marshal(r)
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			if _, err := fmt.Fprintf(a.stdout, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		if s := r.GetStarted(); s != nil {
			fmt.Fprintf(a.stderr, "watching %s (%d directories)\n", s.GetPath(), s.GetDirectories())
		}
		for _, c := range r.GetChanges() {
			name := c.GetPath()
			if c.GetDirectory() {
				name += "/"
			}
			if _, err := fmt.Fprintf(a.stdout, "%s %s\n", changeWords[c.GetKind()], name); err != nil {
				return err
			}
		}
		if n := r.GetNotice(); n != "" {
			fmt.Fprintln(a.stderr, "toold: "+n)
		}
	}
}

func (a *app) watchError(err error) error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.ResourceExhausted, codes.FailedPrecondition:
		return &exitError{code: exitFailure, err: fmt.Errorf("watch: %s", st.Message())}
	}
	return a.policyError("watch", err)
}
