package memory

import (
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
)

// TodoStatus is the state of a todo.
type TodoStatus string

// Todo states.
const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
	TodoCancelled  TodoStatus = "cancelled"
)

// Todo is one item of a conversation's plan.
type Todo struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Status TodoStatus `json:"status"`
	Note   string     `json:"note,omitempty"`
}

// TodoList is a conversation's plan.
type TodoList struct {
	Workspace    string    `json:"-"`
	Conversation string    `json:"conversation_id"`
	Todos        []Todo    `json:"todos"`
	Version      uint64    `json:"version"`
	Updated      time.Time `json:"updated"`
}

// Todo limits.
const (
	MaxTodos      = 100
	MaxTitleChars = 200
	MaxNoteChars  = 2000
)

// checkTodos validates todos for a write (full: titles required, ids
// assigned where missing, statuses default to pending) or an update (ids
// required, other fields optional).
func checkTodos(todos []Todo, full bool) ([]Todo, error) {
	if len(todos) > MaxTodos {
		return nil, errdefs.Invalid("/todos", "maxItems", "%d todos; a list holds at most %d — plan in bigger steps", len(todos), MaxTodos)
	}
	if !full && len(todos) == 0 {
		return nil, errdefs.Invalid("/todos", "minItems", "update needs the todos to change, each with its id")
	}
	out := make([]Todo, 0, len(todos))
	ids := map[string]bool{}
	for i, t := range todos {
		field := "/todos/" + strconv.Itoa(i)
		t.ID = strings.TrimSpace(t.ID)
		t.Title = strings.TrimSpace(t.Title)
		switch {
		case t.ID == "" && !full:
			return nil, errdefs.Invalid(field+"/id", "required", "todo %d has no id; update names todos by id (manage_todos read shows them)", i)
		case t.ID == "":
			t.ID = strconv.Itoa(i + 1)
			for ids[t.ID] {
				t.ID += "+"
			}
		case utf8.RuneCountInString(t.ID) > 64:
			return nil, errdefs.Invalid(field+"/id", "maxLength", "todo id %q is longer than 64 characters", t.ID)
		}
		if ids[t.ID] {
			return nil, errdefs.Invalid(field+"/id", "uniqueItems", "todo id %q appears twice", t.ID)
		}
		ids[t.ID] = true
		if full && t.Title == "" {
			return nil, errdefs.Invalid(field+"/title", "required", "todo %d has no title", i)
		}
		if utf8.RuneCountInString(t.Title) > MaxTitleChars {
			return nil, errdefs.Invalid(field+"/title", "maxLength", "todo %q: the title is longer than %d characters; put details in note", t.ID, MaxTitleChars)
		}
		if utf8.RuneCountInString(t.Note) > MaxNoteChars {
			return nil, errdefs.Invalid(field+"/note", "maxLength", "todo %q: the note is longer than %d characters", t.ID, MaxNoteChars)
		}
		switch t.Status {
		case "":
			if full {
				t.Status = TodoPending
			}
		case TodoPending, TodoInProgress, TodoCompleted, TodoCancelled:
		default:
			return nil, errdefs.Invalid(field+"/status", "enum", "todo %q: status %q; use pending, in_progress, completed or cancelled", t.ID, t.Status)
		}
		for _, s := range []string{t.Title, t.Note} {
			if what, ok := Credential(s); ok {
				return nil, &errdefs.Error{Class: errdefs.ErrDenied, Field: field, Rule: "memory:no-credentials",
					Msg: "refused: todo " + strconv.Quote(t.ID) + " looks like it contains " + what + "; never store secrets"}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func applyTodoChanges(l *TodoList, changes []Todo) (*TodoList, error) {
	idx := make(map[string]int, len(l.Todos))
	for i, t := range l.Todos {
		idx[t.ID] = i
	}
	for _, c := range changes {
		i, ok := idx[c.ID]
		if !ok {
			have := make([]string, len(l.Todos))
			for j, t := range l.Todos {
				have[j] = t.ID
			}
			return nil, errdefs.Invalid("/todos", "exists", "no todo %q in the list (ids: %s); use write to replace the list", c.ID, strings.Join(have, ", "))
		}
		t := &l.Todos[i]
		if c.Title != "" {
			t.Title = c.Title
		}
		if c.Status != "" {
			t.Status = c.Status
		}
		if c.Note != "" {
			t.Note = c.Note
		}
	}
	return l, nil
}

// Counts returns how many todos are in each state.
func (l *TodoList) Counts() map[TodoStatus]int {
	m := map[TodoStatus]int{}
	for _, t := range l.Todos {
		m[t.Status]++
	}
	return m
}

// clone returns a deep copy.
func (l *TodoList) clone() *TodoList {
	c := *l
	c.Todos = append([]Todo(nil), l.Todos...)
	return &c
}

// hub fans todo changes out to watchers.
type hub struct {
	mu     sync.Mutex
	subs   map[*sub]struct{}
	closed bool
}

type sub struct {
	workspace, conversation string
	ch                      chan *TodoList
	// seen is the last version delivered per conversation (under hub.mu).
	seen map[string]uint64
}

// watched returns the (workspace, conversation) of every watcher.
func (h *hub) watched() []sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]sub, 0, len(h.subs))
	for s := range h.subs {
		out = append(out, sub{workspace: s.workspace, conversation: s.conversation})
	}
	return out
}

const watchBuffer = 64

func (h *hub) init() { h.subs = map[*sub]struct{}{} }

func (h *hub) subscribe(workspace, conversation string) (<-chan *TodoList, func()) {
	s := &sub{workspace: workspace, conversation: conversation, ch: make(chan *TodoList, watchBuffer), seen: map[string]uint64{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(s.ch)
		return s.ch, func() {}
	}
	h.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if _, ok := h.subs[s]; ok {
				delete(h.subs, s)
				close(s.ch)
			}
		})
	}
}

// publish never blocks: a full watcher loses its oldest change. Publishes
// are serialized by h.mu, so after the drain there is room. A version of a
// list a watcher was given already (or a newer one) is not given again.
func (h *hub) publish(l *TodoList) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.workspace != l.Workspace || (s.conversation != "" && s.conversation != l.Conversation) {
			continue
		}
		if l.Version <= s.seen[l.Conversation] {
			// Delivered already (through this toold and by notification),
			// or version 0: a list never written, which a resync reads
			// too and which is no change to report.
			continue
		}
		s.seen[l.Conversation] = l.Version
		c := l.clone()
		select {
		case s.ch <- c:
		default:
			select {
			case <-s.ch:
			default:
			}
			s.ch <- c
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		close(s.ch)
		delete(h.subs, s)
	}
}
