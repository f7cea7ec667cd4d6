package service_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/service"
	"github.com/toold/toold/pkg/tools/terminal"

	"github.com/toold/toold/pkg/testenv"
)

// fakeTerminals is a func-field fake of service.Terminals.
type fakeTerminals struct {
	list func(conv string) []terminal.SessionInfo
	get  func(id string) (service.TerminalSession, error)
	open func(ctx context.Context, conv string, opts terminal.SessionOptions) (service.TerminalSession, bool, error)
}

func (f *fakeTerminals) List(conv string) []terminal.SessionInfo { return f.list(conv) }
func (f *fakeTerminals) Get(id string) (service.TerminalSession, error) {
	return f.get(id)
}
func (f *fakeTerminals) Open(ctx context.Context, conv string, opts terminal.SessionOptions) (service.TerminalSession, bool, error) {
	return f.open(ctx, conv, opts)
}

// fakeSession is an in-memory session: output is appended by the test,
// input and resizes are recorded.
type fakeSession struct {
	mu       sync.Mutex
	out      []byte
	first    int64 // bytes before this index are "dropped"
	exited   bool
	changed  chan struct{}
	input    []byte
	sizes    [][2]int
	attached int
	closed   bool
}

func newFakeSession() *fakeSession { return &fakeSession{changed: make(chan struct{})} }

func (f *fakeSession) emit(p string) {
	f.mu.Lock()
	f.out = append(f.out, p...)
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeSession) exit() {
	f.mu.Lock()
	f.exited = true
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeSession) Info() terminal.SessionInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := "running"
	if f.exited {
		st = "exited"
	}
	return terminal.SessionInfo{ID: "sess-1", ConversationID: "conv", Name: "main", Dir: ".", Command: []string{"bash", "-il"},
		Rows: 24, Cols: 80, State: st, Outcome: map[bool]string{true: "exit code 0"}[f.exited], FirstIndex: f.first, NextIndex: int64(len(f.out)), Attached: f.attached}
}

func (f *fakeSession) ReadFrom(ctx context.Context, from int64, limit int) ([]byte, int64, int64, error) {
	for {
		f.mu.Lock()
		start := max(from, f.first)
		if start < int64(len(f.out)) {
			end := min(int64(len(f.out)), start+int64(limit))
			data := append([]byte(nil), f.out[start:end]...)
			f.mu.Unlock()
			return data, start, end, nil
		}
		if f.exited {
			n := int64(len(f.out))
			f.mu.Unlock()
			return nil, n, n, io.EOF
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, from, from, context.Cause(ctx)
		}
	}
}

func (f *fakeSession) Write(p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.input = append(f.input, p...)
	return nil
}

func (f *fakeSession) Resize(rows, cols int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes = append(f.sizes, [2]int{rows, cols})
	return nil
}

func (f *fakeSession) Close(context.Context) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.exit()
	return nil
}

func (f *fakeSession) Attach() func() {
	f.mu.Lock()
	f.attached++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.attached--
		f.mu.Unlock()
	}
}

func (f *fakeSession) snapshot() (input string, sizes [][2]int, attached int, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.input), append([][2]int(nil), f.sizes...), f.attached, f.closed
}

// serveTerminals serves a TerminalService on a temp unix socket (and, when
// tcp is set, on loopback TCP) and returns clients for each.
func serveTerminals(t *testing.T, ts service.Terminals, tokenRequired bool) (unixClient, tcpClient pb.TerminalServiceClient) {
	t.Helper()
	return serveTerminalsWith(t, ts, tokenRequired, executor.NewConversations(executor.ConversationConfig{}))
}

// serveTerminalsWith is serveTerminals with the conversation registry
// whose secrets Attach checks.
func serveTerminalsWith(t *testing.T, ts service.Terminals, tokenRequired bool, convs *executor.Conversations) (unixClient, tcpClient pb.TerminalServiceClient) {
	t.Helper()
	gs := grpc.NewServer()
	pb.RegisterTerminalServiceServer(gs, service.NewTerminalServer(ts, tokenRequired, convs, service.NewAccess(testOperator, convs)))
	dir, err := os.MkdirTemp("", "toold-term")
	if err != nil {
		t.Fatal(err)
	}
	ul, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, l := range []net.Listener{ul, tl} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = gs.Serve(l) }()
	}
	uc, err := grpc.NewClient("unix://"+ul.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := grpc.NewClient(tl.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		uc.Close()
		tc.Close()
		gs.Stop()
		wg.Wait()
		os.RemoveAll(dir)
	})
	return pb.NewTerminalServiceClient(uc), pb.NewTerminalServiceClient(tc)
}

func recvOutput(t *testing.T, s pb.TerminalService_AttachClient, want string) *pb.TerminalOutput {
	t.Helper()
	var got []byte
	var first *pb.TerminalOutput
	for len(got) < len(want) {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("recv: %v (got %q)", err, got)
		}
		o := m.GetOutput()
		if o == nil {
			t.Fatalf("got %v, want output", m)
		}
		if first == nil {
			first = o
		}
		got = append(got, o.GetData()...)
	}
	if string(got) != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	return first
}

func TestTerminalAttach(t *testing.T) {
	t.Parallel()
	sess := newFakeSession()
	sess.emit("old output\n")
	ts := &fakeTerminals{get: func(id string) (service.TerminalSession, error) {
		if id != "sess-1" {
			return nil, errdefs.Failed("no terminal session %q", id)
		}
		return sess, nil
	}}
	convs := executor.NewConversations(executor.ConversationConfig{})
	// The session's conversation ("conv") is held by an agent's stream.
	_, secret, leave, err := convs.Join("conv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	client, _ := serveTerminalsWith(t, ts, false, convs)
	s, err := client.Attach(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{
		Target: &pb.AttachOpen_SessionId{SessionId: "sess-1"}, Size: &pb.TerminalSize{Rows: 50, Cols: 132}, ReplayBytes: 7,
		ConversationSecret: secret,
	}}}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv()
	if err != nil || m.GetAttached().GetSession().GetSessionId() != "sess-1" || m.GetAttached().GetCreated() {
		t.Fatalf("attached: %v %v", m, err)
	}
	if o := recvOutput(t, s, "output\n"); o.GetIndex() != 4 {
		t.Errorf("replay starts at %d, want 4", o.GetIndex())
	}
	sess.emit("live\n")
	recvOutput(t, s, "live\n")
	s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Input{Input: []byte("ls\r")}})
	s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Resize{Resize: &pb.TerminalSize{Rows: 40, Cols: 100}}})
	waitUntil(t, func() bool { in, sizes, _, _ := sess.snapshot(); return in == "ls\r" && len(sizes) == 2 })
	if _, sizes, attached, _ := sess.snapshot(); sizes[0] != [2]int{50, 132} || sizes[1] != [2]int{40, 100} || attached != 1 {
		t.Errorf("sizes %v, attached %d", sizes, attached)
	}
	// Detach: the stream ends OK, the session lives on.
	s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after CloseSend: %v, want EOF", err)
	}
	waitUntil(t, func() bool { _, _, attached, _ := sess.snapshot(); return attached == 0 })
	if _, _, _, closed := sess.snapshot(); closed {
		t.Error("detaching closed the session")
	}
}

// A session's end reaches attached clients as SessionExited, then the
// stream ends OK.
func TestTerminalAttachExit(t *testing.T) {
	t.Parallel()
	sess := newFakeSession()
	var gotOpts terminal.SessionOptions
	ts := &fakeTerminals{open: func(_ context.Context, conv string, opts terminal.SessionOptions) (service.TerminalSession, bool, error) {
		if conv == "" {
			t.Error("no conversation id generated")
		}
		gotOpts = opts
		return sess, false, nil
	}}
	client, _ := serveTerminals(t, ts, false)
	s, _ := client.Attach(t.Context())
	s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{
		Target: &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{WorkingDir: "sub", CloseOnDetach: true}},
		Size:   &pb.TerminalSize{Rows: 30, Cols: 90},
	}}})
	m, err := s.Recv()
	if err != nil || !m.GetAttached().GetCreated() || len(m.GetAttached().GetConversationSecret()) != 32 {
		t.Fatalf("attached: %v %v", m, err)
	}
	if gotOpts.WorkingDir != "sub" || gotOpts.Rows != 30 || gotOpts.Cols != 90 {
		t.Errorf("options %+v", gotOpts)
	}
	sess.emit("$ exit\n")
	recvOutput(t, s, "$ exit\n")
	sess.exit()
	m, err = s.Recv()
	if err != nil || m.GetExited().GetOutcome() != "exit code 0" {
		t.Fatalf("exited: %v %v", m, err)
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after exit: %v", err)
	}
}

// close_on_detach closes a session this client created when it detaches.
func TestTerminalCloseOnDetach(t *testing.T) {
	t.Parallel()
	sess := newFakeSession()
	ts := &fakeTerminals{open: func(context.Context, string, terminal.SessionOptions) (service.TerminalSession, bool, error) {
		return sess, false, nil
	}}
	client, _ := serveTerminals(t, ts, false)
	ctx, cancel := context.WithCancel(t.Context())
	s, _ := client.Attach(ctx)
	s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{
		Target: &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{CloseOnDetach: true}},
	}}})
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel() // the client goes away
	waitUntil(t, func() bool { _, _, _, closed := sess.snapshot(); return closed })
}

func TestTerminalAttachErrors(t *testing.T) {
	t.Parallel()
	ts := &fakeTerminals{
		get: func(id string) (service.TerminalSession, error) {
			return nil, errdefs.Failed("no terminal session %q", id)
		},
		open: func(context.Context, string, terminal.SessionOptions) (service.TerminalSession, bool, error) {
			return nil, false, errdefs.New(errdefs.ErrResourceExhausted, "too many terminal sessions")
		},
	}
	unixClient, tcpClient := serveTerminals(t, ts, false)
	tests := []struct {
		name   string
		client pb.TerminalServiceClient
		first  *pb.AttachRequest
		code   codes.Code
	}{
		{"unknown session", unixClient, &pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{Target: &pb.AttachOpen_SessionId{SessionId: "nope"}}}}, codes.NotFound},
		{"input first", unixClient, &pb.AttachRequest{Msg: &pb.AttachRequest_Input{Input: []byte("x")}}, codes.InvalidArgument},
		{"no target", unixClient, &pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{}}}, codes.InvalidArgument},
		{"limit", unixClient, &pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{Target: &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{}}}}}, codes.ResourceExhausted},
		{"tcp without a token", tcpClient, &pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{Target: &pb.AttachOpen_SessionId{SessionId: "sess-1"}}}}, codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.client.Attach(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			s.Send(tt.first)
			_, err = s.Recv()
			if status.Code(err) != tt.code {
				t.Errorf("error %v, want %v", err, tt.code)
			}
		})
	}
}

// testOperator is the operator credential of the services these tests
// serve.
const testOperator = "operator-credential-for-tests"

// asOperator presents the operator credential; withSecret a conversation's
// secret.
func asOperator(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, service.OperatorMetadata, testOperator)
}

func withSecret(ctx context.Context, secret string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, service.SecretMetadata, secret)
}

// Listing sessions: one conversation's with its secret or as the operator,
// every conversation's as the operator only; otherwise PERMISSION_DENIED,
// and the lister is not asked.
func TestTerminalListSessionsAccess(t *testing.T) {
	t.Parallel()
	convs := executor.NewConversations(executor.ConversationConfig{})
	_, secret, leave, err := convs.Join("c1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	_, other, leaveOther, err := convs.Join("c2", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer leaveOther()
	var listed atomic.Int32
	ts := &fakeTerminals{list: func(conv string) []terminal.SessionInfo {
		listed.Add(1)
		return []terminal.SessionInfo{{ID: "sess-1", ConversationID: conv}}
	}}
	client, _ := serveTerminalsWith(t, ts, false, convs)
	ctx := t.Context()
	tests := []struct {
		name string
		ctx  context.Context
		conv string
		ok   bool
	}{
		{"its secret", withSecret(ctx, secret), "c1", true},
		{"the operator", asOperator(ctx), "c1", true},
		{"the operator, every conversation", asOperator(ctx), "", true},
		{"nothing", ctx, "c1", false},
		{"another conversation's secret", withSecret(ctx, other), "c1", false},
		{"a wrong secret", withSecret(ctx, wrong(secret)), "c1", false},
		{"a secret, every conversation", withSecret(ctx, secret), "", false},
		{"a wrong operator credential", metadata.AppendToOutgoingContext(ctx, service.OperatorMetadata, wrong(testOperator)), "c1", false},
		{"an unknown conversation", withSecret(ctx, secret), "c3", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := listed.Load()
			resp, err := client.ListSessions(tt.ctx, &pb.ListSessionsRequest{ConversationId: tt.conv})
			if tt.ok {
				if err != nil || len(resp.GetSessions()) != 1 {
					t.Fatalf("ListSessions: %v, %v", resp, err)
				}
				return
			}
			if status.Code(err) != codes.PermissionDenied || listed.Load() != before {
				t.Fatalf("ListSessions: %v, %v; want PERMISSION_DENIED without listing", resp, err)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, service.OperatorMetadata) {
				t.Errorf("the refusal does not say what is needed: %q", msg)
			}
		})
	}
}

func TestTerminalListSessions(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := &fakeTerminals{list: func(conv string) []terminal.SessionInfo {
		return []terminal.SessionInfo{{ID: "sess-1", ConversationID: conv, Name: "main", Dir: "src", Command: []string{"bash", "-il"},
			PID: 42, Rows: 24, Cols: 80, Created: created, State: "exited", Outcome: "exit code 3", ExitCode: 3, FirstIndex: 10, NextIndex: 99, Attached: 1}}
	}}
	_, tcpClient := serveTerminals(t, ts, false) // listing is allowed over TCP
	resp, err := tcpClient.ListSessions(asOperator(t.Context()), &pb.ListSessionsRequest{ConversationId: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetSessions()[0]
	if got.GetConversationId() != "c1" || got.GetWorkingDir() != "src" || !got.GetExited() || got.GetExitCode() != 3 ||
		got.GetNextIndex() != 99 || got.GetSize().GetRows() != 24 || !got.GetCreateTime().AsTime().Equal(created) || got.GetAttached() != 1 {
		t.Errorf("session %v", got)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	testenv.Poll(t, 5*time.Second, "the condition", cond)
}

// Attaching to a session needs its conversation's secret: without it, or
// with another, the stream ends PERMISSION_DENIED before anything of the
// session is reached (no attach counted, no resize, no input typed).
func TestTerminalAttachNeedsSecret(t *testing.T) {
	t.Parallel()
	sess := newFakeSession()
	sess.emit("agent's private output\n")
	ts := &fakeTerminals{
		get: func(id string) (service.TerminalSession, error) { return sess, nil },
		open: func(_ context.Context, conv string, _ terminal.SessionOptions) (service.TerminalSession, bool, error) {
			t.Errorf("a session was opened in conversation %q", conv)
			return sess, true, nil
		},
	}
	convs := executor.NewConversations(executor.ConversationConfig{})
	_, secret, leave, err := convs.Join("conv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	_, other, leaveOther, err := convs.Join("other", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer leaveOther()
	client, _ := serveTerminalsWith(t, ts, false, convs)
	byID := func(secret string) *pb.AttachOpen {
		return &pb.AttachOpen{Target: &pb.AttachOpen_SessionId{SessionId: "sess-1"}, ConversationSecret: secret,
			Size: &pb.TerminalSize{Rows: 9, Cols: 9}, ReplayBytes: 100}
	}
	tests := []struct {
		name string
		open *pb.AttachOpen
	}{
		{"session without a secret", byID("")},
		{"session with another conversation's secret", byID(other)},
		{"session with a wrong secret", byID(wrong(secret))},
		{"new session in the conversation without its secret", &pb.AttachOpen{Target: &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{ConversationId: "conv"}}}},
		{"new session in the conversation with another's secret", &pb.AttachOpen{Target: &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{ConversationId: "conv"}}, ConversationSecret: other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := client.Attach(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: tt.open}})
			s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Input{Input: []byte("cat ~/.ssh/id_rsa\r")}})
			m, err := s.Recv()
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("got %v, %v; want PERMISSION_DENIED", m, err)
			}
			if !strings.Contains(status.Convert(err).Message(), "conversation_secret") {
				t.Errorf("message %q does not say what is needed", status.Convert(err).Message())
			}
		})
	}
	in, sizes, attached, closed := sess.snapshot()
	if in != "" || len(sizes) != 0 || attached != 0 || closed {
		t.Errorf("the session was reached: input %q, sizes %v, attached %d, closed %v", in, sizes, attached, closed)
	}

	// The operator attaches without the conversation's secret.
	s, err := client.Attach(asOperator(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: byID("")}})
	if m, err := s.Recv(); err != nil || m.GetAttached() == nil {
		t.Fatalf("the operator's attach: %v, %v", m, err)
	}
	s.CloseSend()
	for {
		if _, err := s.Recv(); err != nil {
			break
		}
	}
}

// wrong returns secret with its last character changed.
func wrong(secret string) string {
	last := byte('0')
	if secret[len(secret)-1] == '0' {
		last = '1'
	}
	return secret[:len(secret)-1] + string(last)
}
