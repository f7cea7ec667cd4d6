package main

import (
	"context"
	"errors"
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

type todosOptions struct {
	conversation string
	watch        bool
	json         bool
}

func (a *app) newTodosCmd() *cobra.Command {
	var o todosOptions
	cmd := &cobra.Command{
		Use:   "todos",
		Short: "Show the todo lists agents keep (manage_todos), optionally live",
		Long: `Show the todo list of a conversation (--conversation), or of every
conversation of toold's workspace, most recently changed first.

--watch keeps showing each list again whenever an agent changes it, until
Ctrl-C or until toold stops. --json prints protojson: the GetTodosResponse,
or with --watch one WatchTodosResponse per line.

Exit status: 0 on success (and when a watch ends), 1 when toold has no
memory storage, 2 on usage errors and when toold cannot be reached.`,
		Example: `  toolctl todos
  toolctl todos --conversation dev-1 --watch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.watch {
				return a.watchTodos(cmd.Context(), o)
			}
			return a.getTodos(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.conversation, "conversation", "", "only this conversation's list")
	f.BoolVar(&o.watch, "watch", false, "keep showing changes as they happen")
	f.BoolVar(&o.json, "json", false, "print protojson")
	return cmd
}

func (a *app) todosError(what string, err error) error {
	if status.Code(err) == codes.Unavailable && strings.Contains(status.Convert(err).Message(), "memory is unavailable") {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", what, status.Convert(err).Message())}
	}
	return a.policyError(what, err)
}

func (a *app) getTodos(ctx context.Context, o todosOptions) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewMemoryServiceClient(conn).GetTodos(a.withSecret(ctx, o.conversation, ""), &pb.GetTodosRequest{ConversationId: o.conversation})
	if err != nil {
		return a.todosError("get todos", err)
	}
	if a.outputMode(o.json) == modeJSON {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	if len(resp.GetLists()) == 0 {
		fmt.Fprintln(a.stderr, "no todo lists")
		return nil
	}
	for i, l := range resp.GetLists() {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		if err := writeTodoList(a.stdout, l); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) watchTodos(ctx context.Context, o todosOptions) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := pb.NewMemoryServiceClient(conn).WatchTodos(a.withSecret(ctx, o.conversation, ""), &pb.WatchTodosRequest{ConversationId: o.conversation})
	if err != nil {
		return a.todosError("watch todos", err)
	}
	json := a.outputMode(o.json) == modeJSON
	for n := 0; ; n++ {
		w, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			fmt.Fprintln(a.stderr, "toold stopped; the watch ended")
			return nil
		case err != nil && ctx.Err() != nil:
			return nil // Ctrl-C
		case err != nil:
			return a.todosError("watch todos", err)
		}
		if json {
			b, err := protojson.Marshal(w)
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			if _, err := fmt.Fprintf(a.stdout, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		if n > 0 {
			fmt.Fprintln(a.stdout)
		}
		if err := writeTodoList(a.stdout, w.GetList()); err != nil {
			return err
		}
	}
}

var todoMarks = map[pb.TodoStatus]string{
	pb.TodoStatus_TODO_STATUS_PENDING:     "[ ]",
	pb.TodoStatus_TODO_STATUS_IN_PROGRESS: "[~]",
	pb.TodoStatus_TODO_STATUS_COMPLETED:   "[x]",
	pb.TodoStatus_TODO_STATUS_CANCELLED:   "[-]",
}

// writeTodoList prints a list:
//
//	dev-1 · 1/3 done · v4 · 12:03:04
//	  [x] 1. Read the code
//	  [~] 2. Write tests — table tests
//	  [ ] 3. Ship
func writeTodoList(w io.Writer, l *pb.TodoList) error {
	var b strings.Builder
	done := 0
	for _, t := range l.GetTodos() {
		if t.GetStatus() == pb.TodoStatus_TODO_STATUS_COMPLETED {
			done++
		}
	}
	fmt.Fprintf(&b, "%s · %d/%d done · v%d", l.GetConversationId(), done, len(l.GetTodos()), l.GetVersion())
	if l.GetUpdated() != nil {
		fmt.Fprintf(&b, " · %s", l.GetUpdated().AsTime().Local().Format(time.TimeOnly))
	}
	b.WriteString("\n")
	if len(l.GetTodos()) == 0 {
		b.WriteString("  (empty)\n")
	}
	for _, t := range l.GetTodos() {
		mark, ok := todoMarks[t.GetStatus()]
		if !ok {
			mark = "[?]"
		}
		fmt.Fprintf(&b, "  %s %s. %s", mark, t.GetId(), t.GetTitle())
		if n := strings.Join(strings.Fields(t.GetNote()), " "); n != "" {
			b.WriteString(" — " + n)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
