package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/client"
)

// callID is the call_id of the one call toolctl makes on its stream.
const callID = "toolctl-1"

// drainTimeout bounds the wait for toold to end the stream after the call
// ended and toolctl closed its side.
const drainTimeout = 2 * time.Second

type callOptions struct {
	name    string
	args    string // --args: JSON object text, or "-" for stdin
	argsSet bool
	pairs   []string // key=value and key:=JSON
	timeout time.Duration
	json    bool
	// Answers: --yes approves every approval once; --answer answers every
	// question. conversation is the Hello's conversation_id.
	yes          bool
	answer       string
	answerSet    bool
	conversation string
	secret       string // --secret: the conversation's secret
	// exitStatus (--exit-status): exit with the command's own status.
	exitStatus bool
}

func (a *app) newCallCmd() *cobra.Command {
	var o callOptions
	cmd := &cobra.Command{
		Use:   "call NAME [key=value | key:=JSON ...]",
		Short: "Run one tool call, showing its progress, and print its result",
		Long: `Run one tool call on an ExecuteTool stream and print the result's content on
stdout. The display line and live progress go to stderr, as does the output
of the tool's stderr; its stdout and terminal output go to stdout.

NAME is a tool ("think"), a tool and operation ("file_operations.read_file")
or a flat operation name ("read_file").

The arguments object is built from --args, then the pairs after NAME:
  key=value    sets key to the string value; toold converts it by the tool's
               schema ("42" becomes 42 where an integer is expected)
  key:=JSON    sets key to a raw JSON value: n:=3, flag:=true, tags:='["a"]'
Pairs override keys of --args. --args - reads the JSON object from stdin.

--json prints every ServerEvent of the stream as one protojson object per
line on stdout, and nothing else there.

Approvals: when policy asks before the call runs, toolctl shows what the
call would do (risk, reason and rule, the command and its parsed
sub-commands, paths, hosts, the diff) and the scopes toold offers, and asks
on the terminal: y approves this call once, a approves for the conversation
(the grant covers what the scope says, until its ttl passes; offered only
with --conversation, since without it the conversation ends with the call),
n denies, with an optional reason the model sees. Questions of a tool (user_collaboration)
are asked there too. Prompts go to stderr, also with --json.

Without a terminal (stdin or stderr redirected, unless stdin carries --args
-), approvals are denied and questions cancel the call. --yes approves every
approval once without asking, and asks nothing: questions are answered with
--answer TEXT, or cancel the call. --conversation sets the conversation, so
grants approved with 'a' and background processes apply to later calls given
the same id.

toold binds a conversation to a secret it hands out when the conversation
starts; joining it later needs the secret. toolctl keeps the secrets of the
conversations it named in $TOOLCTL_SECRETS, or
$XDG_STATE_HOME/toolctl/conversations.json, or
~/.local/state/toolctl/conversations.json (mode 0600), and presents them;
--secret (or $TOOLD_CONVERSATION_SECRET) gives one explicitly, for a
conversation another client started.

Ctrl-C cancels the call and waits for it to end, also while a prompt waits;
a second Ctrl-C quits at once.

Exit status: 0 when the call succeeds, 1 when it ends in error (printed as
"error: CODE: message" on stderr), 2 on usage errors and when toold cannot be
reached.`,
		Example: `  toolctl call think thought="plan the refactor"
  toolctl call read_file path=go.mod limit=5
  toolctl call file_operations operation=grep_search pattern='func main' --json
  echo '{"path":"README.md"}' | toolctl call read_file --args -
  toolctl call edit_file path=go.mod old_string=a new_string=b --conversation dev-1
  toolctl call write_file path=notes.txt content=hi --yes`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeCall, // complete.go: tool names and argument keys from toold
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name, o.pairs = args[0], args[1:]
			o.argsSet = cmd.Flags().Changed("args")
			o.answerSet = cmd.Flags().Changed("answer")
			return a.runCall(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.args, "args", "", "arguments as a JSON object; - reads it from stdin")
	f.DurationVar(&o.timeout, "timeout", 0, "upper bound on the call's run time (default: toold's)")
	f.BoolVar(&o.json, "json", false, "print every ServerEvent as protojson, one per line")
	f.BoolVar(&o.exitStatus, "exit-status", false, "exit with the command's own exit status (128+N when signal N ended it), as ssh and docker exec do")
	f.BoolVarP(&o.yes, "yes", "y", false, "approve every approval once, without asking (and ask nothing)")
	f.StringVar(&o.answer, "answer", "", "answer every question of the call with TEXT, without asking")
	f.StringVar(&o.conversation, "conversation", "", "conversation id (default: a new one); grants, background processes and sessions belong to it")
	f.StringVar(&o.secret, "secret", "", "the conversation's secret (default: $TOOLD_CONVERSATION_SECRET, or the one toolctl stored when it started the conversation)")
	return cmd
}

func (a *app) runCall(ctx context.Context, o callOptions) error {
	if o.name == "" {
		return usageError("the tool NAME is empty")
	}
	if o.timeout < 0 {
		return usageError("--timeout must be positive, got %s", o.timeout)
	}
	args, err := buildArguments(o.args, o.argsSet, o.pairs, a.stdin)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	call := &pb.ToolCall{CallId: callID, Name: o.name}
	if o.conversation != "" {
		// A call of a conversation other calls share: an id of its own, so
		// that history tells them apart and toolctl rewind can name it.
		call.CallId = "toolctl-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if args != "" {
		call.Arguments = &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}
	}
	if o.timeout > 0 {
		call.Timeout = durationpb.New(o.timeout)
	}
	mode := a.outputMode(o.json)

	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	view := a.newCallView(mode)
	defer view.close()
	ask, closeAsk := a.newCallAsker(o, view)
	defer closeAsk()
	hello := &pb.Hello{ClientName: "toolctl/" + version, ConversationId: o.conversation,
		ConversationSecret: a.conversationSecret(o.conversation, o.secret)}
	res, err := a.executeCall(ctx, conn, hello, call, view, ask)
	if err != nil {
		return err
	}
	return callExit(res, o.exitStatus)
}

// callExit is the exit status of a call that ended with res: 1 when it
// failed; with --exit-status, a command's own status when it succeeded
// (what ssh, docker exec and kubectl exec give): its exit code, or 128 plus
// the signal's number when a signal ended it, as shells report it.
func callExit(res *pb.ToolResult, exitStatus bool) error {
	if !res.GetSuccess() {
		return &exitError{code: exitFailure}
	}
	if !exitStatus {
		return nil
	}
	fields := res.GetStructured().GetFields()
	code, ok := fields["exit_code"]
	if !ok {
		return nil // not a command
	}
	n := int(code.GetNumberValue())
	if sig := fields["signal"].GetStringValue(); sig != "" {
		if num, ok := signalNumbers[sig]; ok {
			n = 128 + num
		}
	}
	switch {
	case n == 0:
		return nil
	case n < 0 || n > 255:
		n = 255
	}
	return &exitError{code: n}
}

// newCallAsker returns the asker of a call: --yes and --answer first, then
// the person at the terminal when there is one. A person can be asked when
// stderr is a terminal and stdin is one too, or carried the arguments
// (--args -): answers are read from the controlling terminal. The returned
// func releases the terminal.
func (a *app) newCallAsker(o callOptions, view callView) (asker, func()) {
	c := &callAsker{yes: o.yes, answerText: o.answer, hasAnswer: o.answerSet, show: view.note}
	stdinUsed := o.argsSet && o.args == "-"
	if o.yes || a.openTTY == nil || !a.isTerminal(a.stderr) || !(stdinUsed || isTerminalFile(a.stdin)) {
		return c, func() {}
	}
	f, err := a.openTTY()
	if err != nil {
		c.noPerson = err
		return c, func() {}
	}
	t, err := newTerminal(f, a.stderr)
	if err != nil {
		c.noPerson = err
		return c, func() {}
	}
	c.person = &personAsker{in: t, out: a.stderr, style: a.styleFor(a.stderr), now: time.Now}
	return c, func() { _ = t.close() }
}

// isTerminalFile reports whether r is a terminal.
func isTerminalFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// styleFor colors what goes to w when w is a terminal, unless NO_COLOR is
// set or TERM is dumb.
func (a *app) styleFor(w io.Writer) style {
	return style{color: a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb" && a.isTerminal(w)}
}

// received is one result of Recv.
type received struct {
	ev  *pb.ServerEvent
	err error
}

// executeCall runs call on a new ExecuteTool stream: it sends hello and the
// call, shows every event on view, answers questions with ask, and returns
// once the call has ended, with its result, or the stream broke (an error
// with exit status 2).
//
// Canceling ctx (Ctrl-C) does not break the stream: it sends a Cancel for
// the call and keeps waiting for its ToolCallEnd. After the end, toolctl
// closes its side of the stream and waits briefly for toold to end it, so
// that nothing is left running.
//
// This goroutine is the only one that sends on the stream; a receiver
// goroutine feeds it the events and exits before executeCall returns.
//
// While ask waits for a person, view holds its status line and events wait;
// Ctrl-C then also cancels the call.
func (a *app) executeCall(ctx context.Context, conn *grpc.ClientConn, hello *pb.Hello, call *pb.ToolCall, view callView, ask asker) (*pb.ToolResult, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// The stream resumes the conversation by itself when the connection
	// breaks (toold keeps the call running for its resume grace).
	stream, err := client.Open(sctx, pb.NewToolServiceClient(conn), hello, client.Options{
		OnResume: func(w *pb.Welcome) {
			view.note(fmt.Sprintf("the connection broke; resumed from event %d", w.GetReplayFromSeq()))
		},
	})
	if err != nil {
		cancel()
		return nil, a.rpcError("call", err)
	}
	events := make(chan received)
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			ev, err := stream.Recv()
			select {
			case events <- received{ev, err}:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-recvDone
	}()

	// A failed Send says only io.EOF when the stream is gone; the receiver
	// then gets the reason, so only other errors end the call here.
	send := func(m *pb.ClientMessage) error {
		if err := stream.Send(m); err != nil && !errors.Is(err, io.EOF) {
			return a.rpcError("call", err)
		}
		return nil
	}
	if err := send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: call}}); err != nil {
		return nil, err
	}

	id := call.GetCallId()
	info := askInfo{callID: id, conversationID: hello.GetConversationId(), oneShot: hello.GetConversationId() == ""}
	interrupt := ctx.Done()
	var end *pb.ToolCallEnd
	for end == nil {
		select {
		case <-interrupt:
			interrupt = nil // a second Ctrl-C is main's to handle: it exits
			view.note("canceling the call (press Ctrl-C again to quit)")
			cancelMsg := &pb.Cancel{CallId: id, Reason: "interrupted in toolctl"}
			if err := send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: cancelMsg}}); err != nil {
				return nil, err
			}
		case r := <-events:
			if errors.Is(r.err, io.EOF) {
				return nil, &exitError{code: exitUsage, err: fmt.Errorf("call: toold at %s ended the stream before the call ended", a.where())}
			}
			if r.err != nil {
				return nil, a.rpcError("call", r.err)
			}
			view.event(r.ev)
			if w := r.ev.GetWelcome(); w != nil {
				info.conversationID = w.GetConversationId()
				// A named conversation's secret is kept, so that the next
				// call with --conversation joins it (see secrets.go).
				if hello.GetConversationId() != "" && w.GetConversationSecret() != hello.GetConversationSecret() {
					if err := a.saveConversationSecret(w.GetConversationId(), w.GetConversationSecret()); err != nil {
						view.note("could not keep the conversation's secret: " + err.Error())
					}
				}
			}
			if r.ev.GetCallId() != id {
				continue // stream-level events
			}
			var reply *pb.ClientMessage
			switch e := r.ev.GetEvent().(type) {
			case *pb.ServerEvent_RequiresApproval:
				view.hold(true)
				d, err := ask.approve(ctx, info, e.RequiresApproval)
				view.hold(false)
				if err != nil {
					reply = unanswered(ctx, view, id, err)
				} else {
					reply = &pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: d}}
				}
			case *pb.ServerEvent_InputRequired:
				view.hold(true)
				text, err := ask.answer(ctx, info, e.InputRequired)
				view.hold(false)
				if err != nil {
					reply = unanswered(ctx, view, id, err)
				} else {
					in := &pb.Input{CallId: id, RequestId: e.InputRequired.GetRequestId(), Payload: &pb.Input_Text{Text: text}}
					reply = &pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: in}}
				}
			case *pb.ServerEvent_End:
				end = e.End
			}
			if reply != nil {
				if err := send(reply); err != nil {
					return nil, err
				}
			}
		}
	}

	// The call is over. Close our side; toold then ends the stream.
	_ = stream.CloseSend()
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
drain:
	for {
		select {
		case r := <-events:
			if r.err != nil {
				break drain
			}
		case <-timer.C:
			break drain
		}
	}
	return end.GetResult(), nil
}

// signalNumbers are the numbers of the signals that end commands, by the
// name toold reports ("KILL"), the same on Linux and the BSDs; another
// signal leaves the exit code toold reports (-1: 255).
var signalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6,
	"FPE": 8, "KILL": 9, "SEGV": 11, "PIPE": 13, "ALRM": 14, "TERM": 15,
}

// unanswered is what follows a question ask did not answer: nothing when
// the user pressed Ctrl-C (the loop cancels the call next) or the approval
// expired (toold ends the call), otherwise a Cancel saying why.
func unanswered(ctx context.Context, view callView, id string, err error) *pb.ClientMessage {
	if ctx.Err() != nil || errors.Is(err, errApprovalExpired) {
		return nil
	}
	view.note("canceling the call: " + err.Error())
	c := &pb.Cancel{CallId: id, Reason: "toolctl could not answer: " + err.Error()}
	return &pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: c}}
}

// buildArguments returns the call's arguments as JSON object text: the
// object of --args (argsJSON, or stdin when it is "-") with the pairs set
// over it. A pair is key=value (a string) or key:=JSON (a raw JSON value).
// It returns "" when no arguments were given. Numbers keep their exact text.
func buildArguments(argsJSON string, argsSet bool, pairs []string, stdin io.Reader) (string, error) {
	if !argsSet && len(pairs) == 0 {
		return "", nil
	}
	obj := map[string]any{}
	if argsSet {
		src := "--args"
		if argsJSON == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return "", fmt.Errorf("--args -: reading stdin: %w", err)
			}
			argsJSON, src = string(b), "--args - (stdin)"
		}
		v, err := decodeJSON(argsJSON)
		if err != nil {
			return "", fmt.Errorf("%s is not valid JSON: %w", src, err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%s must be a JSON object like {\"path\": \"main.go\"}, got %s", src, jsonKind(v))
		}
		obj = m
	}
	for _, p := range pairs {
		i := strings.IndexByte(p, '=')
		switch {
		case i < 0:
			return "", fmt.Errorf("argument %q: want key=value or key:=JSON", p)
		case i > 0 && p[i-1] == ':':
			key := p[:i-1]
			if key == "" {
				return "", fmt.Errorf("argument %q: the key is empty", p)
			}
			v, err := decodeJSON(p[i+1:])
			if err != nil {
				return "", fmt.Errorf("argument %q: the value after := is not valid JSON (%v); use key=value for a string", p, err)
			}
			obj[key] = v
		case i == 0:
			return "", fmt.Errorf("argument %q: the key is empty", p)
		default:
			obj[p[:i]] = p[i+1:]
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// decodeJSON decodes one JSON value, keeping numbers as json.Number.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty input")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("extra data after the JSON value")
	}
	return v, nil
}

// jsonKind names the type of a decoded JSON value for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return "an object"
}

// writeLine writes s and ends it with a newline if it has none.
func writeLine(w io.Writer, s string) {
	var b bytes.Buffer
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	_, _ = w.Write(b.Bytes())
}
