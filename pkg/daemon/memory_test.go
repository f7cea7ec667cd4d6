package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/memory/pgtest"
)

// memoryBackends configures a daemon's memory on each backend; the same
// configuration opened again (a restarted daemon) sees the same data.
var memoryBackends = []struct {
	name   string
	config func(t *testing.T) func(*config.Config)
}{
	{"sqlite", func(t *testing.T) func(*config.Config) {
		state := t.TempDir()
		return func(c *config.Config) { c.StateDir = state }
	}},
	{"postgres", func(t *testing.T) func(*config.Config) {
		dsn := pgtest.NewDatabase(t)
		return func(c *config.Config) { c.Memory.Backend = "postgres"; c.Memory.DSN = dsn }
	}},
}

func hello(x *session, conv string) {
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv}}})
	ev, err := x.s.Recv()
	if err != nil || ev.GetWelcome() == nil {
		x.t.Fatalf("welcome: %v %v", ev, err)
	}
}

func text(r *pb.ToolResult) string {
	var b strings.Builder
	for _, c := range r.GetContent() {
		b.WriteString(c.GetText())
	}
	return b.String()
}

// A memory stored in one conversation survives a restart of toold and is
// found by another conversation in the same workspace by a word of it; a
// conversation memory is not.
func TestMemorySurvivesRestart(t *testing.T) {
	for _, b := range memoryBackends {
		t.Run(b.name, func(t *testing.T) {
			ws := t.TempDir()
			cfg := b.config(t)
			d1 := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(cfg))
			x := newSession(t, d1)
			hello(x, "first")
			res, evs := x.call("1", "store_memory", `{"content": "The integration suite is flaky unless GOFLAGS=-count=1 is set.", "tags": ["testing"]}`)
			if !res.GetSuccess() || !strings.Contains(text(res), "Stored memory mem-") {
				t.Fatalf("store: %v", res)
			}
			if s := evs[0].GetStart(); s.GetTool() != "memory_operations" || s.GetOperation() != "store_memory" || !strings.HasPrefix(s.GetDisplay(), "Storing memory: The integration") || s.GetRisk() != pb.RiskLevel_RISK_LEVEL_LOW {
				t.Fatalf("start: %v", s)
			}
			res, _ = x.call("2", "memory_operations", `{"operation": "store_memory", "content": "private scratch about flaky things", "scope": "conversation"}`)
			if !res.GetSuccess() {
				t.Fatalf("store conversation memory: %v", res)
			}
			if err := d1.Main.Close(); err != nil {
				t.Fatal(err)
			}

			d2 := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(cfg))
			y := newSession(t, d2)
			hello(y, "second")
			res, evs = y.call("3", "search_memory", `{"query": "Flaky suite?"}`)
			if !res.GetSuccess() || evs[0].GetStart().GetDisplay() != "Searching memory: Flaky suite?" {
				t.Fatalf("search: %v %v", res, evs[0])
			}
			got := text(res)
			if !strings.Contains(got, "1 memory matches") || !strings.Contains(got, "**flaky**") || !strings.Contains(got, "(relevance 100%") || strings.Contains(got, "scratch") {
				t.Fatalf("search after restart from another conversation:\n%s", got)
			}
			results := res.GetStructured().GetFields()["results"].GetListValue().GetValues()
			if len(results) != 1 || results[0].GetStructValue().GetFields()["tags"].GetListValue().GetValues()[0].GetStringValue() != "testing" {
				t.Fatalf("structured: %v", res.GetStructured())
			}
			// The first conversation still sees its own memory.
			z := newSession(t, d2)
			hello(z, "first")
			res, _ = z.call("5", "search_memory", `{"query": "flaky", "scope": "conversation"}`)
			if !strings.Contains(text(res), "private scratch") {
				t.Fatalf("own conversation memory: %s", text(res))
			}
		})
	}
}

// Todo changes stream live to a second client, through MemoryService and
// as Progress events with the list as data on the agent's own stream.
func TestTodosStreamLive(t *testing.T) {
	d := daemontest.Start(t)
	mem := pb.NewMemoryServiceClient(d.Conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch, err := mem.WatchTodos(d.AsOperator(ctx), &pb.WatchTodosRequest{ConversationId: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || first.GetList().GetVersion() != 0 || len(first.GetList().GetTodos()) != 0 {
		t.Fatalf("initial: %v %v", first, err)
	}

	x := newSession(t, d)
	hello(x, "plan")
	steps := []struct {
		args    string
		display string
		version uint64
		status  []pb.TodoStatus
	}{
		{`{"action": "write", "todos": [{"title": "Read the code"}, {"title": "Write tests"}]}`, "Creating todo list: 2 tasks", 1,
			[]pb.TodoStatus{pb.TodoStatus_TODO_STATUS_PENDING, pb.TodoStatus_TODO_STATUS_PENDING}},
		{`{"action": "write", "todos": [{"id": "1", "title": "Read the code", "status": "completed"}, {"id": "2", "title": "Write tests", "status": "in_progress"}]}`, "Starting: Write tests", 2,
			[]pb.TodoStatus{pb.TodoStatus_TODO_STATUS_COMPLETED, pb.TodoStatus_TODO_STATUS_IN_PROGRESS}},
		{`{"action": "update", "todos": [{"id": "2", "title": "Write tests", "status": "completed"}]}`, "Completed: Write tests", 3,
			[]pb.TodoStatus{pb.TodoStatus_TODO_STATUS_COMPLETED, pb.TodoStatus_TODO_STATUS_COMPLETED}},
	}
	for i, st := range steps {
		res, evs := x.call(string(rune('a'+i)), "manage_todos", st.args)
		if !res.GetSuccess() {
			t.Fatalf("step %d: %v", i, res)
		}
		if got := evs[0].GetStart().GetDisplay(); got != st.display {
			t.Errorf("step %d display %q, want %q", i, got, st.display)
		}
		// The agent's stream carries the whole list as data.
		var data map[string]any
		for _, ev := range evs {
			if p := ev.GetProgress(); p.GetData() != nil {
				data = p.GetData().AsMap()
			}
		}
		if data == nil || data["version"] != float64(st.version) || len(data["todos"].([]any)) != 2 || data["conversation_id"] != "plan" {
			t.Fatalf("step %d: progress data %v", i, data)
		}
		// The watcher sees the change.
		w, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		l := w.GetList()
		if l.GetVersion() != st.version || l.GetConversationId() != "plan" || len(l.GetTodos()) != 2 {
			t.Fatalf("step %d: watched %v", i, l)
		}
		for j, s := range st.status {
			if l.GetTodos()[j].GetStatus() != s {
				t.Fatalf("step %d: todo %d is %v, want %v", i, j, l.GetTodos()[j].GetStatus(), s)
			}
		}
	}
	res, evs := x.call("r", "manage_todos", `{"action": "read"}`)
	if evs[0].GetStart().GetDisplay() != "Reading todo list" || !strings.Contains(text(res), "[x] 2. Write tests") {
		t.Fatalf("read: %v %s", evs[0], text(res))
	}
	// Another conversation's list is its own, and GetTodos shows both.
	y := newSession(t, d)
	hello(y, "other")
	if res, _ := y.call("o", "manage_todos", `{"action": "read"}`); text(res) != "The todo list is empty." {
		t.Fatalf("other conversation sees %s", text(res))
	}
	y.call("o2", "manage_todos", `{"action": "write", "todos": [{"title": "Something else"}]}`)
	all, err := mem.GetTodos(d.AsOperator(ctx), &pb.GetTodosRequest{})
	if err != nil || len(all.GetLists()) != 2 || all.GetLists()[0].GetConversationId() != "other" {
		t.Fatalf("GetTodos: %v %v", all, err)
	}
	// The watcher of "plan" did not see "other"'s change; shutting the
	// daemon down ends its stream with OK.
	if err := d.Main.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err := watch.Recv(); err == nil {
		t.Fatalf("after close: %v", w)
	} else if !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("watch ended with %v, want EOF", err)
	}
}

// Bad input to the tool ends in a typed error and stores nothing.
func TestMemoryRefusals(t *testing.T) {
	d := daemontest.Start(t)
	x := newSession(t, d)
	hello(x, "c")
	cases := []struct {
		name, tool, args string
		code             pb.ErrorCode
		msg              string
	}{
		{"credential", "store_memory", `{"content": "deploy key: -----BEGIN OPENSSH PRIVATE KEY----- abc"}`, pb.ErrorCode_ERROR_CODE_DENIED, "private key"},
		{"env secret", "store_memory", `{"content": "GITHUB_TOKEN=ghx_reallysecretvalue123"}`, pb.ErrorCode_ERROR_CODE_DENIED, "secret"},
		{"too big", "store_memory", `{"content": "` + strings.Repeat("a", 9000) + `"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, ""},
		{"bad scope", "store_memory", `{"content": "x", "scope": "team"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, ""},
		{"unknown id", "delete_memory", `{"id": "mem-0000"}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, "no memory"},
		{"bad todo status", "manage_todos", `{"action": "write", "todos": [{"title": "x", "status": "done"}]}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, ""},
		{"update unknown todo", "manage_todos", `{"action": "update", "todos": [{"id": "9", "status": "completed"}]}`, pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS, "no todo"},
	}
	for i, tc := range cases {
		res, _ := x.call(tc.name+string(rune('0'+i)), tc.tool, tc.args)
		if res.GetSuccess() || res.GetError().GetCode() != tc.code || !strings.Contains(res.GetError().GetMessage(), tc.msg) {
			t.Errorf("%s: %v", tc.name, res)
		}
	}
	res, _ := x.call("list", "list_memories", `{}`)
	if text(res) != "No memories." {
		t.Fatalf("something was stored: %s", text(res))
	}
}

// The state directory holds other conversations' memories: calls cannot
// read it, even where it lies inside the workspace.
func TestStateDirIsSensitive(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, "state")
	d := daemontest.Start(t, daemontest.WithWorkspace(ws), daemontest.WithConfig(func(c *config.Config) {
		c.StateDir = state
		c.ApprovalMode = "yolo"
	}))
	x := newSession(t, d)
	hello(x, "c")
	x.call("s", "store_memory", `{"content": "a conversation secret plan", "scope": "conversation"}`)
	res, _ := x.call("r", "read_file", `{"path": "state/memory.db"}`)
	if res.GetSuccess() || res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_DENIED {
		t.Fatalf("read of the memory database: %v", res)
	}
	res, _ = x.call("g", "grep_search", `{"pattern": "secret plan"}`)
	if strings.Contains(text(res), "memory.db") {
		t.Fatalf("grep reads the memory database: %s", text(res))
	}
}

// A memory database that cannot be opened does not stop toold: the other
// tools work, memory calls end UNAVAILABLE with a reason that names no
// path.
func TestMemoryUnavailable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.StateDir = filepath.Join(blocker, "state") }))
	x := newSession(t, d)
	hello(x, "c")
	if res, _ := x.call("t", "think", `{"thought": "still here"}`); !res.GetSuccess() {
		t.Fatalf("think: %v", res)
	}
	res, _ := x.call("s", "search_memory", `{"query": "anything"}`)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_UNAVAILABLE || strings.Contains(res.GetError().GetMessage(), blocker) {
		t.Fatalf("search: %v", res)
	}
}
