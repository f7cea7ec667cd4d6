package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// session is a minimal client of one ExecuteTool stream for e2e tests.
type session struct {
	t *testing.T
	s pb.ToolService_ExecuteToolClient
}

func newSession(t *testing.T, d *daemontest.Daemon) *session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := d.Client.ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, s: s}
}

func (x *session) send(m *pb.ClientMessage) {
	x.t.Helper()
	if err := x.s.Send(m); err != nil {
		x.t.Fatal(err)
	}
}

// call runs one call to its end and returns the result and its events.
func (x *session) call(id, name, args string) (*pb.ToolResult, []*pb.ServerEvent) {
	x.t.Helper()
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: name, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}}}})
	var evs []*pb.ServerEvent
	for {
		ev, err := x.s.Recv()
		if err != nil {
			x.t.Fatalf("recv: %v (events %v)", err, evs)
		}
		if ev.GetCallId() != id {
			continue
		}
		evs = append(evs, ev)
		if e := ev.GetEnd(); e != nil {
			return e.GetResult(), evs
		}
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	return len(ents)
}

// Bad input against the real daemon and its real tools: each gets its typed
// error, changes nothing, and the stream keeps working.
func TestBadInputsEndToEnd(t *testing.T) {
	d := daemontest.Start(t)
	ws := d.Workspace
	os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("fine\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret\n"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "escape"))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "sub", "secret-link"))
	os.Symlink("../..", filepath.Join(ws, "sub", "up"))

	before := snapshot(t, ws)
	fdsBefore := openFDs(t)
	x := newSession(t, d)
	tests := []struct {
		name, tool, args string
		code             pb.ErrorCode
		msg              string
	}{
		{"unknown tool", "read_fiel", `{"path":"ok.txt"}`, pb.ErrorCode_ERROR_CODE_TOOL_NOT_FOUND, `did you mean "read_file"`},
		{"malformed JSON", "read_file", `{"path":"ok.txt"`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, "not valid JSON"},
		{"wrong type", "read_file", `{"path":["ok.txt"]}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, `"path" must be string`},
		{"bad number", "read_file", `{"path":"ok.txt","limit":"many"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, `"limit"`},
		{"bad operation", "file_operations", `{"operation":"delete_everything"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, "has no operation"},
		{"dotdot", "read_file", `{"path":"../secret.txt"}`, pb.ErrorCode_ERROR_CODE_DENIED, "outside the workspace"},
		{"deep dotdot", "read_file", `{"path":"sub/../../secret.txt"}`, pb.ErrorCode_ERROR_CODE_DENIED, "outside the workspace"},
		{"absolute outside", "read_file", `{"path":"` + filepath.Join(outside, "secret.txt") + `"}`, pb.ErrorCode_ERROR_CODE_DENIED, "outside the workspace"},
		{"etc passwd", "read_file", `{"path":"/etc/passwd"}`, pb.ErrorCode_ERROR_CODE_DENIED, "outside the workspace"},
		{"symlinked dir", "read_file", `{"path":"escape/secret.txt"}`, pb.ErrorCode_ERROR_CODE_DENIED, "symlink"},
		{"symlinked file", "read_file", `{"path":"sub/secret-link"}`, pb.ErrorCode_ERROR_CODE_DENIED, "symlink"},
		{"symlink to parent", "read_file", `{"path":"sub/up/secret.txt"}`, pb.ErrorCode_ERROR_CODE_DENIED, ""},
		{"list outside", "list_dir", `{"path":".."}`, pb.ErrorCode_ERROR_CODE_DENIED, "outside the workspace"},
		{"glob outside", "glob", `{"pattern":"*","path":"escape"}`, pb.ErrorCode_ERROR_CODE_DENIED, ""},
		{"grep outside", "grep_search", `{"pattern":"secret","path":"/tmp"}`, pb.ErrorCode_ERROR_CODE_DENIED, "outside the workspace"},
		{"bad regex", "grep_search", `{"pattern":"(unclosed"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, "pattern"},
		{"missing file", "read_file", `{"path":"nope.txt"}`, pb.ErrorCode_ERROR_CODE_EXECUTION_FAILED, "does not exist"},
		{"directory as file", "read_file", `{"path":"sub"}`, pb.ErrorCode_ERROR_CODE_EXECUTION_FAILED, "directory"},
		{"NUL in path", "read_file", `{"path":"ok.txt\u0000.png"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, "NUL"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x.t = t
			res, evs := x.call(tt.name, tt.tool, tt.args)
			if evs[0].GetStart() == nil {
				t.Fatalf("first event %v", evs[0])
			}
			if res.GetSuccess() || res.GetError().GetCode() != tt.code || !strings.Contains(res.GetError().GetMessage(), tt.msg) {
				t.Fatalf("got %v %q, want %v containing %q", res.GetError().GetCode(), res.GetError().GetMessage(), tt.code, tt.msg)
			}
			if strings.Contains(res.String(), "top secret") {
				t.Fatal("content from outside the workspace leaked")
			}
			good, _ := x.call("good-"+string(rune('a'+i)), "read_file", `{"path":"ok.txt"}`)
			if !good.GetSuccess() || !strings.Contains(good.GetContent()[0].GetText(), "fine") {
				t.Fatalf("stream broken after bad input: %v", good)
			}
		})
	}
	x.t = t

	// A client that disconnects mid-call: the daemon goes on.
	y := newSession(t, d)
	y.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "gone", Name: "grep_search",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"pattern":"x"}`}}}})
	y.s.CloseSend()
	if res, _ := x.call("after-disconnect", "read_file", `{"path":"ok.txt"}`); !res.GetSuccess() {
		t.Fatalf("%v", res)
	}

	if after := snapshot(t, ws); after != before {
		t.Fatalf("the workspace changed:\n%s\n---\n%s", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "top secret\n" {
		t.Fatal("the outside file changed")
	}
	x.s.CloseSend()
	// Descriptors opened for the calls are closed again (allow for the
	// client's own connection churn).
	deadline := time.Now().Add(3 * time.Second)
	for openFDs(t) > fdsBefore+4 {
		if time.Now().After(deadline) {
			t.Fatalf("open descriptors: %d before, %d after", fdsBefore, openFDs(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// snapshot lists every path in the tree with its size and mode.
func snapshot(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + " " + time.Duration(fi.Size()).String() + "\n")
		return nil
	})
	return b.String()
}
