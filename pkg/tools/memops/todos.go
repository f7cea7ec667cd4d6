package memops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/tools"
)

var todosOp = &operation{
	name: "manage_todos",
	description: "Keep this conversation's todo list, which the person sees live. " +
		"action read shows it; write replaces it with todos (give every task; ids are assigned when missing); " +
		"update changes the todos named by id (only the fields given). " +
		"Keep exactly one task in_progress while working, and mark tasks completed as soon as they are done.",
	schema: func(memory.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["read", "write", "update"], "description": "read, write (replace the list) or update (change todos by id)."},
    "todos": {
      "type": "array", "maxItems": %d,
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "maxLength": 64, "description": "The todo's id; required for update."},
          "title": {"type": "string", "maxLength": %d, "description": "What to do; required for write."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"], "description": "Default pending."},
          "note": {"type": "string", "maxLength": %d, "description": "Details or outcome."}
        },
        "additionalProperties": false
      },
      "description": "For write: the whole list. For update: the todos to change."
    }
  },
  "required": ["action"],
  "additionalProperties": false
}`, memory.MaxTodos, memory.MaxTitleChars, memory.MaxNoteChars)
	},
	describe: describeTodos,
	run:      runTodos,
}

type todoArgs struct {
	Action string        `json:"action"`
	Todos  []memory.Todo `json:"todos"`
}

// describeTodos gives SAM's display lines: "Reading todo list", "Updating
// N todos", and for a write, by the statuses it sets: "Starting: TITLE" (a
// task in progress), "Completed: TITLE" (the last completed task, when none
// is in progress), else "Creating todo list: N tasks".
func describeTodos(call *tools.Call) string {
	var a todoArgs
	_ = call.Bind(&a)
	switch a.Action {
	case "read":
		return "Reading todo list"
	case "update":
		if len(a.Todos) == 1 {
			t := a.Todos[0]
			switch {
			case t.Status == memory.TodoInProgress && t.Title != "":
				return "Starting: " + tools.Clip(t.Title, 60)
			case t.Status == memory.TodoCompleted && t.Title != "":
				return "Completed: " + tools.Clip(t.Title, 60)
			}
			return "Updating 1 todo"
		}
		return fmt.Sprintf("Updating %d todos", len(a.Todos))
	case "write":
		var completed string
		for _, t := range a.Todos {
			if t.Status == memory.TodoInProgress {
				return "Starting: " + tools.Clip(t.Title, 60)
			}
			if t.Status == memory.TodoCompleted {
				completed = t.Title
			}
		}
		if completed != "" {
			return "Completed: " + tools.Clip(completed, 60)
		}
		if len(a.Todos) == 1 {
			return "Creating todo list: 1 task"
		}
		return fmt.Sprintf("Creating todo list: %d tasks", len(a.Todos))
	}
	return "Managing todos"
}

func runTodos(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	var a todoArgs
	if err := bind(call, &a); err != nil {
		return nil, err
	}
	var l *memory.TodoList
	var err error
	switch a.Action {
	case "read":
		l, err = m.store.Todos(ctx, o)
	case "write":
		l, err = m.store.WriteTodos(ctx, o, a.Todos)
	case "update":
		l, err = m.store.UpdateTodos(ctx, o, a.Todos)
	}
	if err != nil {
		return nil, err
	}
	data := TodoData(l)
	if a.Action != "read" && sink != nil {
		msg := summary(l)
		if err = sink.ProgressData(msg, data); err != nil {
			return nil, err
		}
	}
	return &tools.Result{Text: RenderTodos(l), Structured: data}, nil
}

// TodoData is a todo list as the structured data of a Progress event and a
// result: {"conversation_id", "version", "updated", "todos": [{"id",
// "title", "status", "note"}], "counts": {status: n}}.
func TodoData(l *memory.TodoList) map[string]any {
	todos := make([]any, len(l.Todos))
	for i, t := range l.Todos {
		todos[i] = map[string]any{"id": t.ID, "title": t.Title, "status": string(t.Status), "note": t.Note}
	}
	counts := map[string]any{}
	for s, n := range l.Counts() {
		counts[string(s)] = float64(n)
	}
	d := map[string]any{"conversation_id": l.Conversation, "version": float64(l.Version), "todos": todos, "counts": counts}
	if !l.Updated.IsZero() {
		d["updated"] = l.Updated.Format(time.RFC3339Nano)
	}
	return d
}

// summary is a one-line status of the list ("2 of 5 done; doing: Write
// tests").
func summary(l *memory.TodoList) string {
	c := l.Counts()
	s := fmt.Sprintf("%d of %d done", c[memory.TodoCompleted], len(l.Todos))
	for _, t := range l.Todos {
		if t.Status == memory.TodoInProgress {
			s += "; doing: " + tools.Clip(t.Title, 60)
			break
		}
	}
	return s
}

var marks = map[memory.TodoStatus]string{
	memory.TodoPending: "[ ]", memory.TodoInProgress: "[~]", memory.TodoCompleted: "[x]", memory.TodoCancelled: "[-]",
}

// RenderTodos renders a list for a model or a terminal:
//
//	Todo list (3 tasks: 1 completed, 1 in progress, 1 pending):
//	[x] 1. Read the code
//	[~] 2. Write tests — table tests
//	[ ] 3. Ship
func RenderTodos(l *memory.TodoList) string {
	if len(l.Todos) == 0 {
		return "The todo list is empty."
	}
	c := l.Counts()
	var parts []string
	for _, s := range []memory.TodoStatus{memory.TodoCompleted, memory.TodoInProgress, memory.TodoPending, memory.TodoCancelled} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], strings.ReplaceAll(string(s), "_", " ")))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Todo list (%d tasks: %s):", len(l.Todos), strings.Join(parts, ", "))
	for _, t := range l.Todos {
		fmt.Fprintf(&b, "\n%s %s. %s", marks[t.Status], t.ID, t.Title)
		if t.Note != "" {
			b.WriteString(" — " + oneLine(t.Note))
		}
	}
	return b.String()
}
