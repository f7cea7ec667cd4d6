package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// conv is a conversation of a test: its id and the secret Welcome gave.
type conv struct{ id, secret string }

// callIn runs one tool call in conversation c on a stream of its own and
// returns its result; the first call of c learns its secret.
func callIn(t *testing.T, conn *grpc.ClientConn, c *conv, name, args string) *pb.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: c.id, ConversationSecret: c.secret}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: fmt.Sprintf("c%d", time.Now().UnixNano()), Name: name,
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: args}}}}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := s.Recv()
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		if w := ev.GetWelcome(); w != nil {
			c.id, c.secret = w.GetConversationId(), w.GetConversationSecret()
		}
		if e := ev.GetEnd(); e != nil {
			s.CloseSend()
			if !e.GetResult().GetSuccess() {
				t.Fatalf("%s %s: %v", name, args, e.GetResult())
			}
			return e.GetResult()
		}
	}
}

// num and str return a field of a result's structured data.
func num(r *pb.ToolResult, name string) int64 {
	return int64(r.GetStructured().GetFields()[name].GetNumberValue())
}

func str(r *pb.ToolResult, name string) string {
	return r.GetStructured().GetFields()[name].GetStringValue()
}

// readOutput reads a background process's output from index from with
// get_output and returns the bytes read, the next index and its state.
func readOutput(t *testing.T, conn *grpc.ClientConn, c *conv, id string, from int64) (data string, next int64, state string) {
	t.Helper()
	args := fmt.Sprintf(`{"process_id":%q,"from_index":%d,"wait_ms":300,"raw":true}`, id, from)
	if from < 0 {
		// From where the previous get_output ended.
		args = fmt.Sprintf(`{"process_id":%q,"wait_ms":300,"raw":true}`, id)
	}
	r := callIn(t, conn, c, "get_output", args)
	if from < 0 {
		from = num(r, "from_index")
	}
	next, state = num(r, "next_index"), str(r, "state")
	if n := next - num(r, "from_index"); n > 0 {
		text := r.GetContent()[0].GetText()
		// The output follows the status line (and notes in brackets).
		_, body, _ := strings.Cut(text, "\n")
		for strings.HasPrefix(body, "[") {
			_, body, _ = strings.Cut(body, "\n")
		}
		if int(n) > len(body) {
			t.Fatalf("get_output from %d: %d bytes expected in %q", from, n, text)
		}
		data = body[:n]
	}
	return data, next, state
}

// shimsIn returns the pids of shims (toold-helper --shim) that hold a file
// below dir open.
func shimsIn(dir string) []int { return daemontest.Shims(dir) }

// runningWith reports whether a process named name (its argv[0], as
// `exec -a name` sets it) runs. Not a substring of any command line (see
// testenv.Named; pkg/daemon's TestSurviveShutdown failed so 1 run in
// 20).
func runningWith(name string) bool { return len(testenv.Named(name)) > 0 }

// The real binary, killed with SIGKILL while a background process writes
// numbered lines and a terminal session prints: the next toold on the same
// state directory adopts both. Every line is read exactly once, in order,
// from the offset the client had; the session is attached to and typed
// into; kill through the new toold leaves no process, and no shim is left.
func TestBinaryProcessesSurviveSIGKILL(t *testing.T) {
	bin := buildToold(t)
	sockDir, err := os.MkdirTemp("", "toold-survive")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	ws, tmp, state := t.TempDir(), t.TempDir(), t.TempDir()
	cfg, sock := filepath.Join(sockDir, "toold.yaml"), filepath.Join(sockDir, "toold.sock")
	conf := fmt.Sprintf("socket: %s\nworkspace: %s\nstate_dir: %s\napproval_mode: yolo\nterminal: {dir: %s}\n", sock, ws, state, tmp)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	sleeper := fmt.Sprintf("survive-sleeper-%d", time.Now().UnixNano())
	fg := fmt.Sprintf("survive-fg-%d", time.Now().UnixNano())
	// Passed or failed, nothing the test started outlives it (this cleanup
	// runs last, after the check below).
	daemontest.KillLeftovers(t, state, sleeper, fg)
	// Last but one, once the toolds are stopped: nothing is left behind,
	// no shim of this state directory.
	t.Cleanup(func() {
		if !testenv.Until(20*time.Second, func() bool { return len(shimsIn(state)) == 0 }) {
			t.Errorf("shims left running: %v", shimsIn(state))
		}
	})

	first := startBinary(t, bin, cfg, sock)
	c := &conv{id: "survive"}
	const lines = 250
	r := callIn(t, first.conn, c, "run_command", fmt.Sprintf(`{"command":"for i in $(seq 1 %d); do echo line-$i; sleep 0.01; done","is_background":true}`, lines))
	proc := str(r, "process_id")
	r = callIn(t, first.conn, c, "run_command", fmt.Sprintf(`{"command":"exec -a %s sleep 1000","is_background":true}`, sleeper))
	sleeperID := str(r, "process_id")
	r = callIn(t, first.conn, c, "create_session", `{}`)
	sess := str(r, "session_id")
	callIn(t, first.conn, c, "send_input", `{"session_id":"`+sess+`","data":"for i in $(seq 1 100); do echo s-$i; sleep 0.01; done\n"}`)

	// A foreground command running when toold dies.
	fgCtx, fgCancel := context.WithCancel(context.Background())
	defer fgCancel()
	fgStream, err := pb.NewToolServiceClient(first.conn).ExecuteTool(fgCtx)
	if err != nil {
		t.Fatal(err)
	}
	fgStream.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: c.id, ConversationSecret: c.secret}}})
	fgStream.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "fg", Name: "run_command",
		Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: fmt.Sprintf(`{"command":"exec -a %s sleep 1000"}`, fg)}}}})
	for {
		ev, err := fgStream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetExecuting() != nil {
			break
		}
	}
	testenv.Poll(t, 10*time.Second, "the foreground command", func() bool { return runningWith(fg) })

	var got strings.Builder
	var next int64
	for next == 0 {
		data, n, _ := readOutput(t, first.conn, c, proc, next)
		got.WriteString(data)
		next = n
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	first.conn.Close()
	readBefore := next
	// The state directory holds no conversation secret (readable there by
	// a command when the operator turned the sandbox off): meta.json
	// keeps a verifier of it.
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), c.secret) {
				t.Errorf("%s holds the conversation's secret", p)
			}
		}
		return nil
	})

	egress, _ := os.ReadFile(filepath.Join(state, "egress.addr"))
	second := startBinary(t, bin, cfg, sock)
	// The egress proxy listens where the adopted processes' helpers
	// forward to.
	if again, _ := os.ReadFile(filepath.Join(state, "egress.addr")); len(egress) > 0 && string(again) != string(egress) {
		t.Errorf("the egress proxy moved from %s to %s", egress, again)
	}
	// The same conversation, with the secret its client had.
	list := callIn(t, second.conn, c, "list_processes", `{}`)
	if text := list.GetContent()[0].GetText(); !strings.Contains(text, proc) || !strings.Contains(text, sleeperID) {
		t.Fatalf("the adopted processes are not listed:\n%s", text)
	}
	// The first read after the restart, without an offset, goes on where
	// the client's last one ended.
	data, n, _ := readOutput(t, second.conn, c, proc, -1)
	if n-int64(len(data)) != next {
		t.Fatalf("get_output after the restart started at %d, not where the last read ended (%d)", n-int64(len(data)), next)
	}
	got.WriteString(data)
	next = n
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, n, st := readOutput(t, second.conn, c, proc, next)
		got.WriteString(data)
		next = n
		if st == "exited" && data == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process did not end; read so far:\n%s", got.String())
		}
	}
	// The foreground command was stopped with toold, and its call is in
	// the history as interrupted by the restart.
	testenv.Poll(t, 10*time.Second, "the foreground command to be stopped", func() bool { return !runningWith(fg) })
	hctx := metadata.AppendToOutgoingContext(context.Background(), "toold-conversation-secret", c.secret)
	hist, err := pb.NewHistoryServiceClient(second.conn).Query(hctx, &pb.QueryHistoryRequest{ConversationId: c.id, Outcome: "error"})
	if err != nil {
		t.Fatal(err)
	}
	interrupted := false
	for _, e := range hist.GetEntries() {
		if e.GetCallId() == "fg" && e.GetErrorCode() == "UNAVAILABLE" && strings.Contains(e.GetSummary(), "interrupted by a restart") {
			interrupted = true
		}
	}
	if !interrupted {
		t.Fatalf("the foreground call is not in the history as interrupted (%d failed calls there)", len(hist.GetEntries()))
	}

	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	if got.String() != want.String() {
		g, w := got.String(), want.String()
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("lines read across the restart (%d bytes before it) are not each line once in order: %d bytes, want %d; from byte %d got %q, want %q\nthe second toold's log:\n%s",
			readBefore, len(g), len(w), i, g[max(0, i-20):min(len(g), i+40)], w[max(0, i-20):min(len(w), i+40)], second.logs.String())
	}

	// The session: its output while toold was down is there, and it takes
	// input through the new toold.
	tc := pb.NewTerminalServiceClient(second.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at, err := tc.Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := uint64(0)
	if err := at.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{
		Target: &pb.AttachOpen_SessionId{SessionId: sess}, FromIndex: &from, ConversationSecret: c.secret}}}); err != nil {
		t.Fatal(err)
	}
	var screen strings.Builder
	typed := false
	for !strings.Contains(screen.String(), "hi-42") {
		m, err := at.Recv()
		if err != nil {
			t.Fatalf("attach: %v; output so far:\n%s\nthe second toold's log:\n%s", err, screen.String(), second.logs.String())
		}
		screen.Write(m.GetOutput().GetData())
		if !typed && strings.Contains(screen.String(), "s-100\r\n") {
			typed = true
			if err := at.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Input{Input: []byte("echo hi-$((6*7))\r")}}); err != nil {
				t.Fatalf("typing: %v\nthe second toold's log:\n%s", err, second.logs.String())
			}
		}
	}
	at.CloseSend()
	seen := map[string]int{}
	for _, m := range regexp.MustCompile(`s-(\d+)\r\n`).FindAllStringSubmatch(screen.String(), -1) {
		seen[m[1]]++
	}
	for i := 1; i <= 100; i++ {
		if seen[strconv.Itoa(i)] != 1 {
			t.Fatalf("s-%d seen %d times in the session's output:\n%s", i, seen[strconv.Itoa(i)], screen.String())
		}
	}

	// kill through the new toold stops the adopted tree.
	testenv.Poll(t, 10*time.Second, "the sleeper to run after the restart", func() bool { return runningWith(sleeper) })
	callIn(t, second.conn, c, "kill", `{"process_id":"`+sleeperID+`"}`)
	if runningWith(sleeper) {
		t.Fatal("the sleeper still runs after kill")
	}
	callIn(t, second.conn, c, "close_session", `{"session_id":"`+sess+`"}`)
}
