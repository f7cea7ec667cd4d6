package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

type shellOptions struct {
	session      string
	workdir      string
	shell        string
	name         string
	conversation string
	secret       string
	keep         bool
	replay       int
	detachKey    string
	list         bool
	json         bool
}

// defaultReplay is how much of an existing session's output toolctl shell
// replays when it attaches, so the person sees the current screen.
const defaultReplay = 16 << 10

func (a *app) newShellCmd() *cobra.Command {
	var o shellOptions
	cmd := &cobra.Command{
		Use:   "shell",
		Short: "Open an interactive terminal in the workspace, or attach to an agent's session",
		Long: `Open a real interactive terminal: a new shell in the workspace, or — with
--session — an existing terminal session, such as the one an agent opened
with terminal_operations.create_session, to watch it and take over.

The local terminal is put in raw mode: every key goes to the session (Ctrl-C
interrupts the program there) and window size changes are forwarded. The
agent and everyone attached type into the same terminal and see the same
output.

Detach with Ctrl-] (--detach-key). A shell toolctl started ends when you
detach, unless --keep; a session attached with --session keeps running.
When the session's shell exits, toolctl exits with its exit status.

Without a terminal on stdin, toolctl forwards stdin as it comes; at its end
a shell toolctl started gets Ctrl-D until it exits (as a person presses it
until the shell ends), and --session detaches.

--list lists the sessions toold holds (--conversation selects one
conversation's).

Attaching to a session needs the secret of its conversation (toold hands it
to the conversation's first stream): toolctl presents the one it stored when
it started that conversation (see 'toolctl call --help'), or --secret (or
$TOOLD_CONVERSATION_SECRET) for an agent's conversation.`,
		Example: `  toolctl shell                         # a new shell in the workspace root
  toolctl shell --workdir src --keep    # survives detaching
  toolctl shell --list
  toolctl shell --session sess-1a2b3c4d # watch and take over an agent's terminal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("replay") && o.session == "" {
				o.replay = 0
			}
			return a.runShell(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.session, "session", "", "attach to this existing session instead of starting a shell")
	f.StringVar(&o.workdir, "workdir", "", "directory to start in, relative to the workspace (new shell)")
	f.StringVar(&o.shell, "shell", "", "program to run (new shell; default toold's shell, as a login shell)")
	f.StringVar(&o.name, "name", "", "name of the session in its conversation (new shell; default main)")
	f.StringVar(&o.conversation, "conversation", "", "conversation of the new session (default: a new one); with --list, list only this conversation's")
	f.StringVar(&o.secret, "secret", "", "the secret of the session's conversation (default: $TOOLD_CONVERSATION_SECRET, or the one toolctl stored for it)")
	f.BoolVar(&o.keep, "keep", false, "keep a shell toolctl started running after you detach")
	f.IntVar(&o.replay, "replay", defaultReplay, "bytes of earlier output to replay when attaching to an existing session")
	f.StringVar(&o.detachKey, "detach-key", "ctrl-]", "key that detaches: ctrl-] or ctrl-\\, ctrl-^, ctrl-_, or ctrl-LETTER")
	f.BoolVar(&o.list, "list", false, "list the sessions instead of attaching")
	f.BoolVar(&o.json, "json", false, "with --list: print the ListSessionsResponse as protojson")
	return cmd
}

// parseDetachKey turns "ctrl-]" into the byte the key sends (0x1d).
func parseDetachKey(s string) (byte, error) {
	k, ok := strings.CutPrefix(strings.ToLower(s), "ctrl-")
	if !ok || len(k) != 1 {
		return 0, usageError("--detach-key %q: want ctrl-] or ctrl-LETTER", s)
	}
	c := k[0]
	switch {
	case c >= 'a' && c <= 'z':
		return c - 'a' + 1, nil
	case c >= '[' && c <= '_', c == '@':
		return c & 0x1f, nil
	}
	return 0, usageError("--detach-key %q: want ctrl-] or ctrl-LETTER", s)
}

func (a *app) runShell(ctx context.Context, o shellOptions) error {
	detachKey, err := parseDetachKey(o.detachKey)
	if err != nil {
		return err
	}
	if o.replay < 0 {
		return usageError("--replay must not be negative")
	}
	if o.session != "" && (o.workdir != "" || o.shell != "" || o.name != "" || o.keep) {
		return usageError("--session attaches to an existing session: --workdir, --shell, --name and --keep apply to a new one")
	}
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pb.NewTerminalServiceClient(conn)
	if o.list {
		return a.listSessions(ctx, client, o)
	}
	tty := a.shellTerminal()
	open := &pb.AttachOpen{}
	if o.session != "" {
		open.Target = &pb.AttachOpen_SessionId{SessionId: o.session}
		// Attaching needs the secret of the session's conversation.
		conv, err := a.sessionConversation(ctx, client, o.session)
		if err != nil {
			return err
		}
		open.ConversationSecret = a.conversationSecret(conv, o.secret)
		if conv == "" { // toolctl may not list every session: the given secret
			open.ConversationSecret = a.explicitSecret(o.secret)
		}
	} else {
		open.ConversationSecret = a.conversationSecret(o.conversation, o.secret)
		open.Target = &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{
			ConversationId: o.conversation, Name: o.name, WorkingDir: o.workdir, Shell: o.shell, CloseOnDetach: !o.keep,
		}}
	}
	if o.replay > 0 {
		open.ReplayBytes = uint32(o.replay)
	}
	if rows, cols, ok := tty.size(); ok {
		open.Size = &pb.TerminalSize{Rows: uint32(rows), Cols: uint32(cols)}
	}
	return a.attach(ctx, client, open, tty, detachKey, o.session == "")
}

// shellTerminal is the local side of toolctl shell: stdin, stdout, and
// whether stdin is a terminal that can be put in raw mode.
type shellTerminal struct {
	// in is stdin, reopened (see reopenInput) so that closeIn interrupts a
	// pending read.
	in      io.Reader
	closeIn func()
	// interruptible says closeIn ends a pending read of in (or reads of in
	// never block).
	interruptible bool
	out           io.Writer
	// fd is stdin's descriptor when it is a terminal, else -1.
	fd int
	// outFd is stdout's descriptor when it is a terminal, else -1.
	outFd int
	// resized delivers window size changes (SIGWINCH); nil when there are
	// none to watch. stop stops watching.
	resized <-chan os.Signal
	stop    func()
}

func (a *app) shellTerminal() *shellTerminal {
	t := &shellTerminal{in: a.stdin, closeIn: func() {}, interruptible: true, out: a.stdout, fd: -1, outFd: -1, stop: func() {}}
	if f, ok := a.stdin.(*os.File); ok {
		if term.IsTerminal(int(f.Fd())) {
			t.fd = int(f.Fd())
		}
		r, err := reopenInput(f)
		if err == nil {
			t.in, t.closeIn = r, func() { r.Close() }
		}
		t.interruptible = err == nil
	}
	if f, ok := a.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		t.outFd = int(f.Fd())
	}
	if t.fd >= 0 || t.outFd >= 0 {
		if a.winch != nil {
			t.resized = a.winch
		} else {
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGWINCH)
			t.resized, t.stop = ch, func() { signal.Stop(ch) }
		}
	}
	return t
}

// reopenInput opens stdin's file (a terminal or a pipe) again, as a new
// open file description: Go makes it non-blocking, so a pending read ends
// when it is closed — without changing the mode of the description stdin
// shares with the shell that started toolctl.
func reopenInput(f *os.File) (*os.File, error) {
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDONLY|syscall.O_NOCTTY, 0)
}

// size returns the local window size.
func (t *shellTerminal) size() (rows, cols int, ok bool) {
	for _, fd := range []int{t.outFd, t.fd} {
		if fd < 0 {
			continue
		}
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			return h, w, true
		}
	}
	return 0, 0, false
}

// attach runs one Attach stream until the session exits or the person
// detaches. created says toolctl asked for a new session: at the end of a
// non-terminal stdin it gets Ctrl-D instead of a detach.
//
// Goroutines: the input reader (stdin → sends), the window watcher
// (SIGWINCH → sends) and the sender (the only one calling Send) end before
// attach returns. (Should stdin not be reopenable, the input reader may
// stay blocked in a read of stdin until the process exits; it sends
// nothing after attach returned.)
func (a *app) attach(ctx context.Context, client pb.TerminalServiceClient, open *pb.AttachOpen, tty *shellTerminal, detachKey byte, created bool) error {
	defer tty.stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.Attach(ctx)
	if err != nil {
		return a.rpcError("attach", err)
	}
	if err := stream.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: open}}); err != nil {
		return a.rpcError("attach", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return a.rpcError("attach", err)
	}
	info := first.GetAttached().GetSession()
	if info == nil {
		return &exitError{code: exitUsage, err: errors.New("attach: toold answered without Attached")}
	}
	if sec := first.GetAttached().GetConversationSecret(); sec != "" && sec != open.GetConversationSecret() && open.GetNewSession().GetConversationId() != "" {
		if err := a.saveConversationSecret(info.GetConversationId(), sec); err != nil {
			fmt.Fprintf(a.stderr, "toolctl: could not keep the conversation's secret: %v\r\n", err)
		}
	}
	fmt.Fprintf(a.stderr, "[attached to %s: %s in %s, conversation %s; detach with %s]\r\n",
		info.GetSessionId(), strings.Join(info.GetCommand(), " "), info.GetWorkingDir(), info.GetConversationId(), keyName(detachKey))

	if tty.fd >= 0 {
		old, err := term.MakeRaw(tty.fd)
		if err != nil {
			return &exitError{code: exitFailure, err: fmt.Errorf("raw mode: %w", err)}
		}
		defer term.Restore(tty.fd, old)
	}

	// One goroutine sends; the others hand it requests. A nil request
	// means "close the sending side" (detach).
	sends := make(chan *pb.AttachRequest, 16)
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		for {
			select {
			case <-ctx.Done():
				return
			case r := <-sends:
				if r == nil {
					_ = stream.CloseSend()
					return
				}
				if stream.Send(r) != nil {
					return
				}
			}
		}
	}()
	inputDone := make(chan struct{})
	defer func() {
		cancel()
		<-sendDone
		tty.closeIn()
		if tty.interruptible {
			<-inputDone
		}
	}()
	send := func(r *pb.AttachRequest) bool {
		select {
		case sends <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	detached := make(chan struct{})
	go func() {
		defer close(inputDone)
		a.forwardInput(ctx, tty, detachKey, created && tty.fd < 0, send, detached)
	}()
	if tty.resized != nil {
		watchDone := make(chan struct{})
		defer func() { cancel(); <-watchDone }()
		go func() {
			defer close(watchDone)
			for {
				select {
				case <-ctx.Done():
					return
				case <-tty.resized:
					if rows, cols, ok := tty.size(); ok {
						send(&pb.AttachRequest{Msg: &pb.AttachRequest_Resize{Resize: &pb.TerminalSize{Rows: uint32(rows), Cols: uint32(cols)}}})
					}
				}
			}
		}()
	}

	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			fmt.Fprintf(a.stderr, "\r\n[detached from %s", info.GetSessionId())
			if !created || !open.GetNewSession().GetCloseOnDetach() {
				fmt.Fprintf(a.stderr, "; reattach with: toolctl shell --session %s", info.GetSessionId())
			} else {
				fmt.Fprint(a.stderr, "; it was closed")
			}
			fmt.Fprint(a.stderr, "]\r\n")
			return nil
		}
		if err != nil {
			select {
			case <-detached:
				return nil
			default:
			}
			return a.rpcError("attach", err)
		}
		switch msg := m.GetMsg().(type) {
		case *pb.AttachResponse_Output:
			if d := msg.Output.GetDropped(); d > 0 {
				fmt.Fprintf(a.stderr, "\r\n[%d bytes of output were dropped: this client fell behind]\r\n", d)
			}
			if _, err := a.stdout.Write(msg.Output.GetData()); err != nil {
				return &exitError{code: exitFailure, err: err}
			}
		case *pb.AttachResponse_Exited:
			fmt.Fprintf(a.stderr, "\r\n[session %s ended: %s]\r\n", info.GetSessionId(), msg.Exited.GetOutcome())
			code := int(msg.Exited.GetExitCode())
			if code < 0 || code > 255 {
				code = exitFailure
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		}
	}
}

// forwardInput reads stdin and sends it as input until the detach key or
// the end of stdin. At the end of stdin it ends the input when eot is set
// (a shell toolctl started should exit: see endInput), and otherwise
// detaches.
func (a *app) forwardInput(ctx context.Context, tty *shellTerminal, detachKey byte, eot bool, send func(*pb.AttachRequest) bool, detached chan<- struct{}) {
	buf := make([]byte, 4096)
	for {
		n, err := tty.in.Read(buf)
		if ctx.Err() != nil {
			return
		}
		p := buf[:n]
		if i := bytes.IndexByte(p, detachKey); i >= 0 && tty.fd >= 0 {
			if i > 0 {
				send(input(p[:i]))
			}
			close(detached)
			send(nil)
			return
		}
		if n > 0 && !send(input(p)) {
			return
		}
		if err != nil {
			if eot {
				endInput(ctx, send)
				return
			}
			close(detached)
			send(nil)
			return
		}
	}
}

// eotEvery is how often endInput presses Ctrl-D again.
const eotEvery = 250 * time.Millisecond

// endInput ends the input of a shell toolctl started: it sends Ctrl-D
// until the session ends (ctx is done), as a person presses it until the
// shell exits. One is not enough: a Ctrl-D that arrives while a command
// runs ends that command's input (or, when nothing reads, is dropped as the
// shell switches the terminal back to its line editor), and the shell
// itself must read one at its prompt.
func endInput(ctx context.Context, send func(*pb.AttachRequest) bool) {
	t := time.NewTicker(eotEvery)
	defer t.Stop()
	for send(input([]byte{0x04})) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func input(p []byte) *pb.AttachRequest {
	return &pb.AttachRequest{Msg: &pb.AttachRequest_Input{Input: bytes.Clone(p)}}
}

// keyName names a control key for people: 0x1d is "Ctrl-]".
func keyName(b byte) string { return "Ctrl-" + string(rune(b+'@')) }

func (a *app) listSessions(ctx context.Context, client pb.TerminalServiceClient, o shellOptions) error {
	resp, err := client.ListSessions(a.withSecret(ctx, o.conversation, o.secret), &pb.ListSessionsRequest{ConversationId: o.conversation})
	if err != nil {
		return a.rpcError("list sessions", err)
	}
	if o.json {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(b))
		return nil
	}
	if len(resp.GetSessions()) == 0 {
		fmt.Fprintln(a.stderr, "no terminal sessions")
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tCONVERSATION\tNAME\tDIR\tCOMMAND\tSTATE\tSIZE\tATTACHED\tSTARTED")
	for _, s := range resp.GetSessions() {
		state := "running"
		if s.GetExited() {
			state = s.GetOutcome()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%dx%d\t%d\t%s\n", s.GetSessionId(), s.GetConversationId(), s.GetName(), s.GetWorkingDir(),
			strings.Join(s.GetCommand(), " "), state, s.GetSize().GetCols(), s.GetSize().GetRows(), s.GetAttached(),
			s.GetCreateTime().AsTime().Local().Format(time.DateTime))
	}
	return w.Flush()
}

// sessionConversation returns the conversation of session id, or "" when
// toold does not list it (Attach then says it is unknown) or toolctl may
// not list every session (it is not the operator).
func (a *app) sessionConversation(ctx context.Context, client pb.TerminalServiceClient, id string) (string, error) {
	resp, err := client.ListSessions(ctx, &pb.ListSessionsRequest{})
	if status.Code(err) == codes.PermissionDenied {
		// Listing every conversation's sessions is the operator's; without
		// it, Attach checks the secret given.
		return "", nil
	}
	if err != nil {
		return "", a.rpcError("attach", err)
	}
	for _, s := range resp.GetSessions() {
		if s.GetSessionId() == id {
			return s.GetConversationId(), nil
		}
	}
	return "", nil
}
