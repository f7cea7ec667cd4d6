package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

func TestCall(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, nil, nil)
	if err := os.WriteFile(filepath.Join(d.Workspace, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string   // exactly, when set
		outHas []string // or these parts
		errHas []string
	}{
		{name: "think key=value", args: []string{"think", "thought=hello there"},
			stdout: "hello there\n", errHas: []string{"Thinking: hello there"}},
		{name: "args JSON", args: []string{"think", "--args", `{"thought":"from json"}`},
			stdout: "from json\n"},
		{name: "args from stdin", stdin: `{"thought": "from stdin"}`, args: []string{"think", "--args", "-"},
			stdout: "from stdin\n"},
		{name: "raw JSON values", args: []string{"echo", "text=hi", "n:=3", `tags:=["a","b"]`},
			stdout: `{"n":3,"tags":["a","b"],"text":"hi"}` + "\n", errHas: []string{"Echoing: hi"}},
		{name: "strings coerced by the schema", args: []string{"echo", "text=hi", "n=42"},
			stdout: `{"n":42,"text":"hi"}` + "\n"},
		{name: "pairs override args", args: []string{"echo", "--args", `{"text":"a","n":1}`, "text=b"},
			stdout: `{"n":1,"text":"b"}` + "\n"},
		{name: "read_file", args: []string{"read_file", "path=notes.txt"},
			outHas: []string{"first line", "second line"}, errHas: []string{"Reading file: notes.txt"}},
		{name: "dotted name and raw limit", args: []string{"file_operations.read_file", "path=notes.txt", "limit:=1"},
			outHas: []string{"first line"}},
		// Streamed output goes to stdout as it comes; the result, which
		// repeats it for the model, is summed up by its first line on stderr.
		{name: "output chunks and progress", args: []string{"spew"},
			stdout: "out line\n", errHas: []string{"err line\n", "  warming up (25%)", "spewed\n"}},
		{name: "unknown tool", args: []string{"thnik", "thought=x"}, code: exitFailure,
			errHas: []string{"error: TOOL_NOT_FOUND: ", "suggestions: think"}},
		{name: "invalid arguments", args: []string{"think", "thought:=42"}, code: exitFailure,
			errHas: []string{"error: INVALID_ARGUMENTS: ", "field: /thought", "rule: type"}},
		{name: "missing argument", args: []string{"think"}, code: exitFailure,
			errHas: []string{"error: INVALID_ARGUMENTS: ", "rule: required"}},
		{name: "execution failed", args: []string{"read_file", "path=absent.txt"}, code: exitFailure,
			errHas: []string{"error: EXECUTION_FAILED: "}},
		{name: "timeout", args: []string{"sleep", "ms=5000", "--timeout", "50ms"}, code: exitFailure,
			errHas: []string{"Sleeping", "error: TIMEOUT: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := cli{stdin: tt.stdin}.run(t, append([]string{"--socket", d.Socket, "call"}, tt.args...)...)
			r.check(t, tt.code, tt.outHas, tt.errHas)
			if tt.stdout != "" && r.stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", r.stdout, tt.stdout)
			}
			if tt.code != exitOK && strings.Contains(r.stdout, "Error:") {
				t.Errorf("the error went to stdout too:\n%s", r.stdout)
			}
		})
	}
}

// TestCallJSON checks that --json prints only protojson ServerEvents on
// stdout: the Welcome, then the call's events from its Start to its End.
func TestCallJSON(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, nil, nil)
	tests := []struct {
		name    string
		args    []string
		code    int
		success bool
		errCode pb.ErrorCode
	}{
		{"success", []string{"think", "thought=hi"}, exitOK, true, 0},
		{"progress and output", []string{"spew"}, exitOK, true, 0},
		{"unknown tool", []string{"nope"}, exitFailure, false, pb.ErrorCode_ERROR_CODE_TOOL_NOT_FOUND},
		{"invalid arguments", []string{"think", "thought:=1"}, exitFailure, false, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runAt(t, d.Socket, append([]string{"call", "--json"}, tt.args...)...)
			r.check(t, tt.code, nil, nil)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			var evs []*pb.ServerEvent
			for i, line := range lines {
				ev := &pb.ServerEvent{}
				if err := protojson.Unmarshal([]byte(line), ev); err != nil {
					t.Fatalf("line %d is not a ServerEvent: %v\n%s", i+1, err, line)
				}
				if ev.GetEvent() == nil {
					t.Errorf("line %d has no event: %s", i+1, line)
				}
				if i > 0 && ev.GetSeq() != evs[i-1].GetSeq()+1 {
					t.Errorf("line %d: seq %d after %d", i+1, ev.GetSeq(), evs[i-1].GetSeq())
				}
				evs = append(evs, ev)
			}
			if len(evs) < 3 {
				t.Fatalf("%d events, want Welcome, Start, ..., End:\n%s", len(evs), r.stdout)
			}
			if evs[0].GetWelcome() == nil {
				t.Errorf("first event is not Welcome: %v", evs[0])
			}
			if evs[1].GetStart() == nil || evs[1].GetCallId() != callID {
				t.Errorf("first call event is not Start of %s: %v", callID, evs[1])
			}
			last := evs[len(evs)-1]
			if last.GetEnd() == nil || last.GetCallId() != callID {
				t.Fatalf("last event is not End of %s: %v", callID, last)
			}
			for _, ev := range evs[2 : len(evs)-1] {
				if ev.GetStart() != nil || ev.GetEnd() != nil {
					t.Errorf("another Start or End in the middle: %v", ev)
				}
			}
			res := last.GetEnd().GetResult()
			if res.GetSuccess() != tt.success || res.GetError().GetCode() != tt.errCode {
				t.Errorf("result %v", res)
			}
			if !tt.success && !strings.Contains(r.stderr, "error: "+codeName(tt.errCode)) {
				t.Errorf("stderr lacks the error line:\n%s", r.stderr)
			}
		})
	}
}

// TestCallInterrupt cancels the context (what Ctrl-C does) while a call
// runs: toolctl sends a Cancel, the tool sees it, and the call's End says
// CANCELED.
func TestCallInterrupt(t *testing.T) {
	t.Parallel()
	started, canceled := make(chan string, 1), make(chan string, 1)
	d := startDaemon(t, started, canceled)
	for _, asJSON := range []bool{false, true} {
		ctx, interrupt := context.WithCancel(t.Context())
		done := make(chan result, 1)
		args := []string{"--socket", d.Socket, "call", "sleep", "ms=60000"}
		if asJSON {
			args = append(args, "--json")
		}
		go func() { done <- cli{ctx: ctx}.run(t, args...) }()
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the call did not start")
		}
		interrupt()
		select {
		case id := <-canceled:
			if id != callID {
				t.Errorf("canceled %q", id)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the tool was not canceled")
		}
		r := <-done
		r.check(t, exitFailure, nil, []string{"canceling the call", "error: CANCELED: "})
		if asJSON && !strings.Contains(r.stdout, `"end"`) {
			t.Errorf("no End event on stdout:\n%s", r.stdout)
		}
	}
}

// fakeToolService is a func-field fake of the ToolService, for stream
// behavior toold does not show yet (approvals, questions).
type fakeToolService struct {
	pb.UnimplementedToolServiceServer
	execute func(pb.ToolService_ExecuteToolServer) error
}

func (f *fakeToolService) ExecuteTool(s pb.ToolService_ExecuteToolServer) error { return f.execute(s) }

// scriptedStream runs a fake server's side of one call: it expects Hello
// and the call, then runs step, which sends and receives the rest.
func scriptedStream(t *testing.T, step func(s pb.ToolService_ExecuteToolServer, send func(*pb.ServerEvent)) error) string {
	return serve(t, func(gs *grpc.Server) {
		pb.RegisterToolServiceServer(gs, &fakeToolService{execute: func(s pb.ToolService_ExecuteToolServer) error {
			seq := uint64(0)
			send := func(ev *pb.ServerEvent) {
				seq++
				ev.Seq = seq
				if err := s.Send(ev); err != nil {
					t.Errorf("send: %v", err)
				}
			}
			hello, err := s.Recv()
			if err != nil || hello.GetHello() == nil || !strings.HasPrefix(hello.GetHello().GetClientName(), "toolctl/") {
				t.Errorf("first message %v, %v; want Hello from toolctl", hello, err)
			}
			call, err := s.Recv()
			if err != nil || call.GetCall().GetCallId() != callID {
				t.Errorf("second message %v, %v; want the call", call, err)
			}
			send(&pb.ServerEvent{Event: &pb.ServerEvent_Welcome{Welcome: &pb.Welcome{}}})
			send(&pb.ServerEvent{CallId: callID, Event: &pb.ServerEvent_Start{Start: &pb.ToolCallStart{Display: "Running: rm -rf build"}}})
			if err := step(s, send); err != nil {
				return err
			}
			// toolctl closes its side after the End.
			if m, err := s.Recv(); !errors.Is(err, io.EOF) {
				t.Errorf("after the End: %v, %v; want EOF", m, err)
			}
			return nil
		}})
	})
}

func endWith(code pb.ErrorCode, msg string) *pb.ServerEvent {
	return &pb.ServerEvent{CallId: callID, Event: &pb.ServerEvent_End{End: &pb.ToolCallEnd{Result: &pb.ToolResult{
		Error:    &pb.ToolError{Code: code, Message: msg},
		Content:  []*pb.Content{{Kind: &pb.Content_Text{Text: "Error: " + msg}}},
		Duration: durationpb.New(time.Millisecond),
	}}}}
}

// TestCallQuestions checks the answers without a terminal: approvals are
// shown and denied, questions cancel the call.
func TestCallQuestions(t *testing.T) {
	t.Parallel()
	t.Run("approval denied", func(t *testing.T) {
		t.Parallel()
		socket := scriptedStream(t, func(s pb.ToolService_ExecuteToolServer, send func(*pb.ServerEvent)) error {
			send(&pb.ServerEvent{CallId: callID, Event: &pb.ServerEvent_RequiresApproval{RequiresApproval: &pb.RequiresApproval{
				ApprovalId: "ap-1",
				Effect:     &pb.Effect{Summary: "delete the build directory", Command: "rm -rf build"},
				Reason:     "high risk command in AUTO mode",
				Risk:       pb.RiskLevel_RISK_LEVEL_HIGH,
			}}})
			m, err := s.Recv()
			if err != nil {
				return err
			}
			want := &pb.ApprovalDecision{ApprovalId: "ap-1", Approve: false, Reason: noTerminalReason}
			if !proto.Equal(m.GetApproval(), want) {
				t.Errorf("decision %v, want %v", m, want)
			}
			send(endWith(pb.ErrorCode_ERROR_CODE_REJECTED_BY_USER, "the user refused: "+noTerminalReason))
			return nil
		})
		r := runAt(t, socket, "call", "run_command", "command=rm -rf build")
		r.check(t, exitFailure, nil, []string{
			"Running: rm -rf build",
			"approval needed (high risk): delete the build directory",
			"reason:   high risk command in AUTO mode",
			"command:  rm -rf build",
			"denied: no terminal to ask on",
			"error: REJECTED_BY_USER: the user refused",
		})
		if r.stdout != "" {
			t.Errorf("stdout %q: the stand-in error content should not be printed", r.stdout)
		}
	})
	t.Run("question canceled", func(t *testing.T) {
		t.Parallel()
		socket := scriptedStream(t, func(s pb.ToolService_ExecuteToolServer, send func(*pb.ServerEvent)) error {
			send(&pb.ServerEvent{CallId: callID, Event: &pb.ServerEvent_InputRequired{InputRequired: &pb.InputRequired{
				RequestId: "q-1", Prompt: "Which branch?",
			}}})
			m, err := s.Recv()
			if err != nil {
				return err
			}
			if m.GetCancel().GetCallId() != callID {
				t.Errorf("got %v, want a Cancel", m)
			}
			send(&pb.ServerEvent{Event: &pb.ServerEvent_Rejected{Rejected: &pb.MessageRejected{
				Code: pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, Message: "just testing",
			}}})
			send(endWith(pb.ErrorCode_ERROR_CODE_CANCELED, "the call was canceled by the client"))
			return nil
		})
		r := runAt(t, socket, "call", "ask_user")
		r.check(t, exitFailure, nil, []string{
			"question: Which branch?",
			"canceling the call: no terminal to ask on",
			"toold rejected a message: INVALID_ARGUMENTS: just testing",
			"error: CANCELED: ",
		})
	})
	t.Run("stream ends early", func(t *testing.T) {
		t.Parallel()
		socket := serve(t, func(gs *grpc.Server) {
			pb.RegisterToolServiceServer(gs, &fakeToolService{execute: func(s pb.ToolService_ExecuteToolServer) error {
				_, _ = s.Recv()
				_, _ = s.Recv()
				return nil
			}})
		})
		r := runAt(t, socket, "call", "think", "thought=x")
		r.check(t, exitUsage, nil, []string{"ended the stream before the call ended"})
	})
}

// TestCallHuman runs a call in human mode: the status line is cleared and
// replaced by a summary line.
func TestCallHuman(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, nil, nil)
	r := cli{tty: true}.run(t, "--socket", d.Socket, "call", "sleep", "ms=300")
	r.check(t, exitOK, nil, []string{"Sleeping", "\r\x1b[2K", "✓ Sleeping ("})
	if r.stdout != "slept\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	r = cli{tty: true}.run(t, "--socket", d.Socket, "call", "thnik")
	r.check(t, exitFailure, nil, []string{"✗ Calling thnik", "error: TOOL_NOT_FOUND"})
}

// TestPlainProgress checks the rate limit of progress lines in plain mode.
func TestPlainProgress(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	a := &app{stdout: &stdout, stderr: &stderr, isTerminal: func(io.Writer) bool { return false }, terminalWidth: func(io.Writer) int { return 0 }}
	v := newTextView(a, false)
	now := time.Unix(0, 0)
	v.now = func() time.Time { return now }
	progress := func(at time.Duration, msg string) {
		now = time.Unix(0, 0).Add(at)
		v.event(&pb.ServerEvent{CallId: callID, Event: &pb.ServerEvent_Progress{Progress: &pb.Progress{Message: msg}}})
	}
	v.event(&pb.ServerEvent{CallId: callID, Event: &pb.ServerEvent_Start{Start: &pb.ToolCallStart{Display: "Searching"}}})
	progress(0, "1 file")
	progress(500*time.Millisecond, "2 files") // too soon
	progress(1100*time.Millisecond, "3 files")
	progress(2200*time.Millisecond, "3 files") // unchanged
	progress(2300*time.Millisecond, "")        // no message
	progress(3300*time.Millisecond, "4 files")
	v.close()
	want := "Searching\n  1 file\n  3 files\n  4 files\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestWriteResult checks how result content and errors are printed.
func TestWriteResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		res            *pb.ToolResult
		stdout, stderr string
	}{
		{"text and json", &pb.ToolResult{Success: true, Content: []*pb.Content{
			{Kind: &pb.Content_Text{Text: "done"}}, {Kind: &pb.Content_Json{Json: `{"a":1}`}},
		}}, "done\n{\"a\":1}\n", ""},
		{"blob", &pb.ToolResult{Success: true, Content: []*pb.Content{
			{Kind: &pb.Content_Blob{Blob: &pb.Blob{MimeType: "image/png", Data: []byte("png")}}},
		}}, "", "(image/png content of 3 bytes not shown; use --json)\n"},
		{"truncated", &pb.ToolResult{Success: true, Content: []*pb.Content{{Kind: &pb.Content_Text{Text: "a\n"}}},
			Truncation: &pb.Truncation{Truncated: true, ShownBytes: 2, TotalBytes: 10, ShownItems: 1, TotalItems: 5, Continuation: "read_file with offset=2"},
		}, "a\n", "note: the result was cut for the model: 2 of 10 bytes shown; 1 of 5 items; continue with read_file with offset=2\n"},
		{"partial output of a failed call", &pb.ToolResult{
			Content: []*pb.Content{{Kind: &pb.Content_Text{Text: "partial"}}},
			Error:   &pb.ToolError{Code: pb.ErrorCode_ERROR_CODE_TIMEOUT, Message: "too slow"},
		}, "partial\n", "error: TIMEOUT: too slow\n"},
		{"denied with rule", &pb.ToolResult{
			Content: []*pb.Content{{Kind: &pb.Content_Text{Text: "Error: no"}}},
			Error:   &pb.ToolError{Code: pb.ErrorCode_ERROR_CODE_DENIED, Message: "no", Rule: "deny-rm"},
		}, "", "error: DENIED: no\n  rule: deny-rm\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr strings.Builder
			writeResult(&stdout, &stderr, tt.res)
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}
}

// TestCallExitStatus: a command's non-zero exit is a successful call (exit
// 0) unless --exit-status asks for the command's own status, as ssh and
// docker exec give it; a signal is 128+N; a failed call stays 1.
func TestCallExitStatus(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"status lost without the flag", []string{"run_command", "command=exit 3"}, exitOK},
		{"exit 3", []string{"run_command", "command=exit 3", "--exit-status"}, 3},
		{"exit 0", []string{"run_command", "command=true", "--exit-status"}, exitOK},
		{"killed by SIGKILL", []string{"run_command", "command=kill -KILL $$", "--exit-status", "--yes"}, 128 + 9},
		{"not a command", []string{"think", "thought=x", "--exit-status"}, exitOK},
		{"a failed call", []string{"read_file", "path=absent.txt", "--exit-status"}, exitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runAt(t, d.Socket, append([]string{"call"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.code, tt.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestCallCompletion: shell completion of `toolctl call` asks toold, as
// kubectl completes resource names: tool names first, then the argument
// keys of that tool's schema not given yet; nothing when toold is not there.
func TestCallCompletion(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)
	complete := func(args ...string) []string {
		t.Helper()
		r := runAt(t, d.Socket, append([]string{"__complete", "call"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("__complete %q: exit %d\n%s", args, r.code, r.stderr)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				out = append(out, strings.SplitN(l, "\t", 2)[0])
			}
		}
		return out
	}
	names := complete("read")
	for _, want := range []string{"read_file", "file_operations.read_file", "think"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool names %q lack %q", names, want)
		}
	}
	keys := complete("read_file", "path=x", "")
	if !slices.Contains(keys, "limit=") || slices.Contains(keys, "path=") {
		t.Errorf("argument keys of read_file after path=: %q", keys)
	}
	if keys := complete("file_operations.list_dir", ""); !slices.Contains(keys, "path=") {
		t.Errorf("argument keys of file_operations.list_dir: %q", keys)
	}
	r := cli{}.run(t, "--socket", filepath.Join(t.TempDir(), "none.sock"), "__complete", "call", "")
	if r.code != exitOK || strings.Contains(r.stdout, "read_file") {
		t.Errorf("without toold: exit %d, %q", r.code, r.stdout)
	}
}
