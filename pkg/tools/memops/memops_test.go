package memops_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/memops"
)

func args(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDisplayLines(t *testing.T) {
	m := memops.New(nil, "/ws", errors.New("off"))
	cases := []struct{ op, args, want string }{
		{"search_memory", `{"query": "build flags"}`, "Searching memory: build flags"},
		{"store_memory", `{"content": "use make test"}`, "Storing memory: use make test"},
		{"list_memories", `{}`, "Listing memories"},
		{"list_memories", `{"scope": "global"}`, "Listing global memories"},
		{"delete_memory", `{"id": "mem-1"}`, "Deleting memory: mem-1"},
		{"update_memory", `{"id": "mem-1", "content": "x"}`, "Updating memory: mem-1"},
		{"manage_todos", `{"action": "read"}`, "Reading todo list"},
		{"manage_todos", `{"action": "write", "todos": [{"title": "a"}, {"title": "b"}, {"title": "c"}]}`, "Creating todo list: 3 tasks"},
		{"manage_todos", `{"action": "write", "todos": [{"title": "a"}]}`, "Creating todo list: 1 task"},
		{"manage_todos", `{"action": "write", "todos": [{"title": "a", "status": "completed"}, {"title": "Write tests", "status": "in_progress"}]}`, "Starting: Write tests"},
		{"manage_todos", `{"action": "write", "todos": [{"title": "a", "status": "completed"}, {"title": "Write tests", "status": "completed"}, {"title": "c"}]}`, "Completed: Write tests"},
		{"manage_todos", `{"action": "update", "todos": [{"id": "1", "status": "completed"}, {"id": "2", "status": "in_progress"}]}`, "Updating 2 todos"},
		{"manage_todos", `{"action": "update", "todos": [{"id": "2", "title": "Write tests", "status": "in_progress"}]}`, "Starting: Write tests"},
		{"manage_todos", `{"action": "update", "todos": [{"id": "2", "status": "completed"}]}`, "Updating 1 todo"},
	}
	for _, tc := range cases {
		e := m.Describe(&tools.Call{Tool: memops.ToolName, Operation: tc.op, Args: args(t, tc.args)})
		if e.Display != tc.want || e.Risk != tools.RiskLow {
			t.Errorf("%s %s: %q (%v), want %q", tc.op, tc.args, e.Display, e.Risk, tc.want)
		}
	}
}

func TestSpecIsLowRiskAndRegisters(t *testing.T) {
	m := memops.New(nil, "/ws", errors.New("off"))
	r := tools.NewRegistry()
	if err := r.Register(m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, op := range m.Spec().Operations {
		names = append(names, op.Name)
		if op.Risk != tools.RiskLow {
			t.Errorf("%s is %v", op.Name, op.Risk)
		}
	}
	if strings.Join(names, ",") != "store_memory,search_memory,list_memories,update_memory,delete_memory,manage_todos" {
		t.Fatalf("operations %v", names)
	}
}

// recordingSink records a call's progress lines and data.
type recordingSink struct {
	lines []string
	data  []map[string]any
}

func (s *recordingSink) sink() *tools.Sink {
	return &tools.Sink{ProgressFunc: func(msg string, _ float64, d map[string]any) error {
		s.lines = append(s.lines, msg)
		if d != nil {
			s.data = append(s.data, d)
		}
		return nil
	}}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	be, err := memory.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New(memory.Config{Backend: be})
	defer store.Close()
	m := memops.New(store, "/ws", nil)
	call := func(op, a string, sink *tools.Sink) (*tools.Result, error) {
		return m.Run(ctx, &tools.Call{ID: "1", ConversationID: "c", Tool: memops.ToolName, Operation: op, Args: args(t, a)}, sink)
	}

	ds := &recordingSink{}
	res, err := call("manage_todos", `{"action": "write", "todos": [{"title": "Read"}, {"title": "Write", "status": "in_progress", "note": "carefully"}]}`, ds.sink())
	if err != nil {
		t.Fatal(err)
	}
	want := "Todo list (2 tasks: 1 in progress, 1 pending):\n[ ] 1. Read\n[~] 2. Write — carefully"
	if res.Text != want {
		t.Fatalf("text:\n%s\nwant:\n%s", res.Text, want)
	}
	if len(ds.data) != 1 || ds.lines[0] != "0 of 2 done; doing: Write" || ds.data[0]["version"] != float64(1) {
		t.Fatalf("progress: %v %v", ds.lines, ds.data)
	}
	// An update reports the list again; read reports none.
	rs := &recordingSink{}
	if _, err := call("manage_todos", `{"action": "update", "todos": [{"id": "2", "status": "completed"}]}`, rs.sink()); err != nil {
		t.Fatal(err)
	}
	if _, err := call("manage_todos", `{"action": "read"}`, rs.sink()); err != nil {
		t.Fatal(err)
	}
	if len(rs.lines) != 1 || rs.lines[0] != "1 of 2 done" || len(rs.data) != 1 {
		t.Fatalf("progress: %v %v", rs.lines, rs.data)
	}

	res, err = call("store_memory", `{"content": "Use   make test\nbefore pushing", "tags": ["ci"]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Structured["id"].(string)
	res, err = call("list_memories", `{"limit": 1}`, nil)
	if err != nil || !strings.Contains(res.Text, "Memories 1-1 of 1") || !strings.Contains(res.Text, "Use make test before pushing") || !strings.Contains(res.Text, "tags: ci") {
		t.Fatalf("list: %v %s", err, res.Text)
	}
	call("store_memory", `{"content": "second"}`, nil)
	res, _ = call("list_memories", `{"limit": 1}`, nil)
	if res.Truncation == nil || res.Truncation.TotalItems != 2 || !strings.Contains(res.Text, "offset 1") {
		t.Fatalf("paging: %+v %s", res.Truncation, res.Text)
	}
	if res, err = call("update_memory", `{"id": "`+id+`", "tags": []}`, nil); err != nil || len(res.Structured["tags"].([]string)) != 0 {
		t.Fatalf("update tags: %v %v", res, err)
	}
	if _, err := call("delete_memory", `{"id": "`+id+`"}`, nil); err != nil {
		t.Fatal(err)
	}
	res, _ = call("search_memory", `{"query": "make"}`, nil)
	if res.Text != `No memory matches "make".` {
		t.Fatalf("search after delete: %s", res.Text)
	}
	if _, err := call("forget_everything", `{}`, nil); !errors.Is(err, errdefs.ErrToolNotFound) {
		t.Fatalf("unknown operation: %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	m := memops.New(nil, "/ws", errors.New("database locked by another program"))
	_, err := m.Run(context.Background(), &tools.Call{Operation: "search_memory", ConversationID: "c", Args: map[string]any{"query": "x"}}, nil)
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "database locked") {
		t.Fatalf("err = %v", err)
	}
}
