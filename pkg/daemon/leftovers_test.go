package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/leftover"

	"github.com/toold/toold/pkg/testenv"
)

// eventually polls cond until it holds or 20 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Poll(t, 20*time.Second, what, cond)
}

// deadMark is the owner mark of a process that ran and is gone.
func deadMark(t *testing.T) string {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(c.Process.Pid) + "p1"
}

// liveMark is the owner mark of a process that runs until the test ends.
func liveMark(t *testing.T) string {
	t.Helper()
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	m, err := leftover.MarkOf(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// After a toold is SIGKILLed, its temporary files stay in the workspace and
// its output directory in the temp dir. The next toold removes exactly
// those at start: names with the owner mark of a toold that no longer
// runs, found without following symlinks; nothing else, nothing outside.
func TestLeftoversRemovedAtStart(t *testing.T) {
	ws, tmp, outside := t.TempDir(), t.TempDir(), t.TempDir()
	dead, live := deadMark(t), liveMark(t)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	canary := filepath.Join(outside, ".c.txt.toold-"+dead+"-0123456789ab.tmp")
	write(canary, "outside: never touched")
	outCanary := filepath.Join(outside, "keep.out")
	write(outCanary, "outside: never touched")
	gone := []string{
		filepath.Join(ws, ".main.go.toold-"+dead+"-0123456789ab.tmp"),
		filepath.Join(ws, "deep", "er", ".x.toold-"+dead+"-abcdefabcdef.tmp"),
		filepath.Join(tmp, "toold-out-"+dead+"-123", "outputs", "1.out"),
	}
	kept := []string{
		filepath.Join(ws, ".main.go.toold-"+live+"-0123456789ab.tmp"),   // a toold that runs
		filepath.Join(ws, ".old.toold-0123456789ab.tmp"),                // no owner mark
		filepath.Join(ws, "notes.tmp"),                                  // not toold's
		filepath.Join(ws, "main.go.toold-"+dead+"-0123456789ab.tmp"),    // not hidden: not tempName's
		filepath.Join(ws, ".main.go.toold-"+dead+"-0123456789ab.tmp.x"), // not tempName's
		filepath.Join(tmp, "toold-out-"+live+"-456", "outputs", "1.out"),
		filepath.Join(tmp, "toold-123456", "outputs", "1.out"), // an older toold's: no mark
	}
	for _, p := range append(gone, kept...) {
		write(p, "x")
	}
	// Symlinks are never followed: not into a directory outside, not as a
	// leftover's name.
	for _, l := range [][2]string{
		{outside, filepath.Join(ws, "link")},
		{canary, filepath.Join(ws, ".l.toold-"+dead+"-0123456789ab.tmp")},
		{outside, filepath.Join(tmp, "toold-out-"+dead+"-789")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, l[1])
	}
	daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) {
		c.Terminal.Dir = tmp
	}))
	eventually(t, "the leftovers to be removed", func() bool {
		for _, p := range gone {
			if exists(p) {
				return false
			}
		}
		return !exists(filepath.Join(tmp, "toold-out-"+dead+"-123"))
	})
	for _, p := range append(kept, canary, outCanary) {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
	// The running toold's own names carry its mark, and its own output
	// directory is there.
	own, _ := filepath.Glob(filepath.Join(tmp, "toold-out-"+leftover.Mark()+"-*"))
	if len(own) != 1 {
		t.Errorf("toold's output directory: %v", own)
	}
}

// The kept output of commands is bounded by count, not only by bytes: 30
// commands with keep_count 5 leave at most 5 output files, and reading an
// evicted one says why.
func TestKeptOutputBoundedByCount(t *testing.T) {
	tmp := t.TempDir()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = tmp
		c.Terminal.KeepCount = 5
	}))
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{}}})
	for i := range 30 {
		res, _ := x.call(fmt.Sprint("c", i), "run_command", `{"command":"echo out-`+strconv.Itoa(i)+`"}`)
		if !res.GetSuccess() {
			t.Fatalf("run %d: %v", i, res)
		}
	}
	files, _ := filepath.Glob(filepath.Join(tmp, "toold-out-*", "outputs", "*"))
	if len(files) > 5 {
		t.Fatalf("%d kept output files after 30 commands with keep_count 5", len(files))
	}
	res, _ := x.call("r0", "read_output", `{"call_id":"c0"}`)
	if res.GetSuccess() || !strings.Contains(res.GetError().GetMessage(), "to keep at most 5 outputs") {
		t.Fatalf("read of an evicted output: %v", res)
	}
	res, _ = x.call("r29", "read_output", `{"call_id":"c29"}`)
	if !res.GetSuccess() || !strings.Contains(res.GetContent()[0].GetText(), "out-29") {
		t.Fatalf("read of a kept output: %v", res)
	}
}

// pidByArgs returns the pid of the process whose command line is
// "sleep arg", or 0.
func pidByArgs(arg string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == "sleep\x00"+arg+"\x00" {
			return pid
		}
	}
	return 0
}

func running(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// Streams without a Hello each start a conversation; background processes
// they leave are reaped once the conversation has been idle for idle_ttl,
// and beyond max_idle at once. A conversation with a stream attached keeps
// its processes.
func TestAbandonedConversationsReaped(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = t.TempDir()
		c.Conversations.IdleTTL = config.Duration(500 * time.Millisecond)
		c.Conversations.MaxIdle = 3
	}))
	// A sandboxed command sees the pids of its own pid namespace, so each
	// sleep is found in toold's by a unique argument.
	n := 0
	start := func(x *session, name string) int {
		t.Helper()
		n++
		arg := fmt.Sprintf("600.%d%d", os.Getpid(), n)
		res, _ := x.call("bg-"+name, "run_command", `{"command":"exec sleep `+arg+`","is_background":true}`)
		if !res.GetSuccess() {
			t.Fatalf("background %s: %v", name, res)
		}
		var pid int
		eventually(t, "the pid of "+name, func() bool {
			pid = pidByArgs(arg)
			return pid != 0
		})
		return pid
	}
	keeper := newSession(t, d)
	keeper.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "keeper"}}})
	kept := start(keeper, "keeper")

	var pids []int
	for i := range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := d.Client.ExecuteTool(ctx)
		if err != nil {
			t.Fatal(err)
		}
		x := &session{t: t, s: s}
		for j := range 4 {
			pids = append(pids, start(x, fmt.Sprintf("s%d-%d", i, j)))
		}
		if i < 2 {
			if res, _ := x.call("sess", "create_session", `{}`); !res.GetSuccess() {
				t.Fatalf("create_session: %v", res)
			}
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := s.Recv(); err != nil {
				break
			}
		}
		cancel()
	}
	eventually(t, "every abandoned process to be reaped", func() bool {
		for _, pid := range pids {
			if running(pid) {
				return false
			}
		}
		return true
	})
	if !running(kept) {
		t.Fatal("the process of a conversation with a stream attached was reaped")
	}
	eventually(t, "the abandoned sessions to be closed", func() bool {
		resp, err := pb.NewTerminalServiceClient(d.Conn).ListSessions(d.AsOperator(t.Context()), &pb.ListSessionsRequest{})
		return err == nil && len(resp.GetSessions()) == 0
	})
	res, _ := keeper.call("list", "list_processes", `{}`)
	if !strings.Contains(res.GetContent()[0].GetText(), "running") {
		t.Fatalf("keeper's processes: %v", res)
	}
}

// rawCodec sends rawMessage as is, everything else as proto: a client in
// another language (or a hostile one) may send invalid UTF-8.
type rawMessage []byte

type rawCodec struct{ proto encoding.CodecV2 }

func (c rawCodec) Name() string { return "proto" }
func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(r)}, nil
	}
	return c.proto.Marshal(v)
}
func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func rawCall(id, name, args string) []byte {
	var call []byte
	for _, f := range []struct {
		n protowire.Number
		s string
	}{{1, id}, {2, name}, {3, args}} {
		call = protowire.AppendString(protowire.AppendTag(call, f.n, protowire.BytesType), f.s)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), call)
}

// Against the real daemon: a 50 MB call and one with invalid UTF-8 each
// end alone, while a real command runs on the same stream; that command
// ends once, with its own result.
func TestBadMessagesEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = t.TempDir()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := d.Client.ExecuteTool(ctx, grpc.ForceCodecV2(rawCodec{encoding.GetCodecV2("proto")}))
	if err != nil {
		t.Fatal(err)
	}
	x := &session{t: t, s: s}
	if err := syscall.Mkfifo(filepath.Join(d.Workspace, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "cmd", Name: "run_command",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"command":"echo started; read line < pipe; echo done-$line"}`}}}})
	endsOf := map[string]int{}
	var rejected []*pb.MessageRejected
	var cmdEnd *pb.ToolResult
	results := map[string]*pb.ToolResult{}
	recvUntil := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			ev, err := s.Recv()
			if err != nil {
				t.Fatalf("stream ended (%v) before %s", err, what)
			}
			if r := ev.GetRejected(); r != nil {
				rejected = append(rejected, r)
			}
			if e := ev.GetEnd(); e != nil {
				endsOf[ev.GetCallId()]++
				results[ev.GetCallId()] = e.GetResult()
				if ev.GetCallId() == "cmd" {
					cmdEnd = e.GetResult()
				}
			}
			if ev.GetProgress().GetOutput() != nil && strings.Contains(string(ev.GetProgress().GetOutput().GetData()), "started") {
				results["cmd-started"] = &pb.ToolResult{}
			}
		}
	}
	recvUntil("the command's output", func() bool { return results["cmd-started"] != nil })
	big := `{"path":"big.txt","content":"` + strings.Repeat("x", 50_000_000) + `"}`
	for _, m := range [][]byte{
		rawCall("big", "write_file", big),
		rawCall("cmd", "write_file", big), // the running call's id
		rawCall("utf", "write_file", `{"path":"u.txt","content":"\xff\xfe"}`),
		rawCall("cmd", "write_file", "\xff"),
	} {
		if err := s.SendMsg(rawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	recvUntil("the bad messages' answers", func() bool { return endsOf["big"] == 1 && endsOf["utf"] == 1 && len(rejected) == 2 })
	if c := results["big"].GetError().GetCode(); c != pb.ErrorCode_ERROR_CODE_RESOURCE_EXHAUSTED {
		t.Errorf("50 MB call: %v", results["big"])
	}
	if c := results["utf"].GetError().GetCode(); c != pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS {
		t.Errorf("invalid UTF-8 call: %v", results["utf"])
	}
	for _, r := range rejected {
		if r.GetReferenceId() != "cmd" {
			t.Errorf("rejection %v", r)
		}
	}
	if endsOf["cmd"] != 0 {
		t.Fatal("the running command ended because of another message")
	}
	for _, f := range []string{"big.txt", "u.txt"} {
		if exists(filepath.Join(d.Workspace, f)) {
			t.Errorf("a refused message wrote %s", f)
		}
	}
	// The command goes on and ends with its own result, once.
	if err := os.WriteFile(filepath.Join(d.Workspace, "pipe"), []byte("42\n"), 0); err != nil {
		t.Fatal(err)
	}
	recvUntil("the command's end", func() bool { return cmdEnd != nil })
	var st map[string]any
	b, _ := json.Marshal(cmdEnd.GetStructured().AsMap())
	_ = json.Unmarshal(b, &st)
	if !cmdEnd.GetSuccess() || st["exit_code"] != float64(0) || !strings.Contains(cmdEnd.GetContent()[0].GetText(), "done-42") {
		t.Fatalf("the command's result: %v", cmdEnd)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream ended with %v", err)
		}
	}
	if endsOf["cmd"] != 1 {
		t.Fatalf("%d ends of the command", endsOf["cmd"])
	}
}

// Against the real daemon: a client holding the token cannot reach
// another conversation's background processes by its id; the owner can,
// from a new stream, with the secret.
func TestConversationSecretEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = t.TempDir()
	}))
	owner := newSession(t, d)
	owner.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "victim"}}})
	w, err := owner.s.Recv()
	if err != nil || w.GetWelcome().GetConversationSecret() == "" {
		t.Fatalf("welcome: %v %v", w, err)
	}
	secret := w.GetWelcome().GetConversationSecret()
	res, _ := owner.call("bg", "run_command", `{"command":"exec sleep 600","is_background":true}`)
	procID, _ := res.GetStructured().AsMap()["process_id"].(string)
	if procID == "" {
		t.Fatalf("background: %v", res)
	}
	if err := owner.s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := owner.s.Recv(); err != nil {
			break
		}
	}
	for _, hello := range []*pb.Hello{
		{ConversationId: "victim"},
		{ConversationId: "victim", ConversationSecret: "guess"},
	} {
		x := newSession(t, d)
		x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: hello}})
		_ = x.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "k", Name: "kill",
			Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"process_id":"` + procID + `"}`}}}})
		ev, err := x.s.Recv()
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("joining without the secret: %v %v", ev, err)
		}
	}
	back := newSession(t, d)
	back.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: "victim", ConversationSecret: secret}}})
	res, _ = back.call("list", "list_processes", `{}`)
	if text := res.GetContent()[0].GetText(); !strings.Contains(text, procID) || !strings.Contains(text, "running") {
		t.Fatalf("the owner's process after the refused attempts: %s", text)
	}
}

// The settings of this file load from YAML, and bad values are errors.
func TestConfigBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "toold.yaml")
	os.WriteFile(p, []byte("limits: {message_bytes: 1048576}\nconversations: {idle_ttl: 90s, max_idle: 7}\nterminal: {keep_count: 12, keep_age: 5m}\n"), 0o644)
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.MessageBytes != 1<<20 || time.Duration(c.Conversations.IdleTTL) != 90*time.Second || c.Conversations.MaxIdle != 7 ||
		c.Terminal.KeepCount != 12 || time.Duration(c.Terminal.KeepAge) != 5*time.Minute {
		t.Fatalf("loaded %+v", c)
	}
	for _, bad := range []string{
		"limits: {message_bytes: -1}", "limits: {message_bytes: 4294967296}",
		"conversations: {idle_ttl: -1s}", "conversations: {max_idle: -2}",
		"terminal: {keep_count: -1}", "terminal: {keep_age: -1m}",
	} {
		os.WriteFile(p, []byte(bad+"\n"), 0o644)
		c, err := config.Load(p)
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// The server side of the same class: a result carrying invalid UTF-8 (a
// file name in the workspace, bytes a tool passed on) used to fail
// grpc-go's marshaling, which ends the stream and every call on it. It is
// sent with U+FFFD instead, and the stream goes on.
func TestInvalidUTF8InResultsEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "yolo"
		c.Terminal.Dir = t.TempDir()
	}))
	if err := os.WriteFile(filepath.Join(d.Workspace, "bad\xffname.txt"), []byte("x\xff\xfey\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{}}})
	tests := []struct{ tool, args, want string }{
		{"list_dir", `{"path":"."}`, "bad\ufffdname.txt"},
		{"glob", `{"pattern":"*.txt"}`, "bad\ufffdname.txt"},
		{"grep_search", `{"pattern":"x"}`, "bad\ufffdname.txt"},
		{"run_command", `{"command":"ls; printf 'a\\377b\\n'"}`, "name.txt"},
	}
	for i, tt := range tests {
		res, _ := x.call(fmt.Sprint("c", i), tt.tool, tt.args)
		if !res.GetSuccess() || !strings.Contains(res.GetContent()[0].GetText(), tt.want) {
			t.Errorf("%s: %v", tt.tool, res)
		}
	}
	res, _ := x.call("after", "think", `{"thought":"still here"}`)
	if !res.GetSuccess() {
		t.Fatalf("after: %v", res)
	}
}
