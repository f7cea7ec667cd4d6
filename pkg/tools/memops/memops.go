// Package memops implements memory_operations, the consolidated built-in
// tool that lets an agent keep what it learned between conversations and
// keep a plan the person can see: store_memory, search_memory,
// list_memories, update_memory, delete_memory and manage_todos, each also
// callable by its flat name. Storage, scopes, limits and the refusal of
// credentials are pkg/memory's; this package shapes calls and results for a
// model.
//
// Every change of a todo list is also reported as a Progress event whose
// structured data is the whole list ({"todos": [...], "version": N,
// "conversation_id": ...}), so that a client can draw the plan live.
package memops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/tools"
)

// ToolName is the name of the tool.
const ToolName = "memory_operations"

// MemoryOperations is the memory_operations tool. It is safe for concurrent
// use.
type MemoryOperations struct {
	store     *memory.Store
	unavail   error
	workspace string
	spec      tools.Spec
}

var _ tools.Tool = (*MemoryOperations)(nil)

// New returns the tool over store for the workspace identified by
// workspace. When store is nil the tool is listed but its calls fail
// UNAVAILABLE, saying why (unavailable, e.g. the database could not be
// opened).
func New(store *memory.Store, workspace string, unavailable error) *MemoryOperations {
	m := &MemoryOperations{store: store, unavail: unavailable, workspace: workspace}
	lim := memory.DefaultLimits
	if store != nil {
		lim = store.Limits()
	}
	specs := make([]tools.OperationSpec, 0, len(operations))
	for _, op := range operations {
		specs = append(specs, tools.OperationSpec{Name: op.name, Description: op.description, Risk: tools.RiskLow, Schema: json.RawMessage(op.schema(lim))})
	}
	m.spec = tools.Spec{Name: ToolName, Description: description, Operations: specs, Source: "builtin"}
	return m
}

const description = "Remember what you learn across conversations, and keep a visible plan. " +
	"store_memory saves a fact, decision or lesson (scope: conversation = only this conversation, workspace = every conversation in this workspace (default), global = everywhere); " +
	"search_memory finds memories by words, best first, with the matched words marked **like this**; " +
	"list_memories lists them newest first; update_memory and delete_memory change or remove one by id. " +
	"manage_todos keeps this conversation's todo list, which the person sees live: write replaces the list, update changes todos by id, read shows it. " +
	"Never store secrets (keys, tokens, passwords): they are refused."

type operation struct {
	name, description string
	schema            func(memory.Limits) string
	describe          func(call *tools.Call) string
	run               func(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, sink *tools.Sink) (*tools.Result, error)
}

// operations in the order the model sees them; keep it stable.
var operations = []*operation{storeOp, searchOp, listOp, updateOp, deleteOp, todosOp}

// Spec implements tools.Tool.
func (m *MemoryOperations) Spec() tools.Spec { return m.spec }

// Describe implements tools.Tool: SAM's display lines ("Searching memory:
// build flags", "Creating todo list: 3 tasks", "Starting: Write tests").
func (m *MemoryOperations) Describe(call *tools.Call) tools.Effect {
	for _, op := range operations {
		if op.name == call.Operation {
			return tools.Effect{Display: op.describe(call), Risk: tools.RiskLow}
		}
	}
	return tools.Effect{Display: "Memory operation: " + tools.Clip(call.Operation, 40)}
}

// Run implements tools.Tool.
func (m *MemoryOperations) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	var op *operation
	for _, o := range operations {
		if o.name == call.Operation {
			op = o
		}
	}
	if op == nil {
		names := make([]string, len(operations))
		for i, o := range operations {
			names[i] = o.name
		}
		return nil, errdefs.New(errdefs.ErrToolNotFound, "%s has no operation %q; use one of %s", ToolName, call.Operation, strings.Join(names, ", "))
	}
	if m.store == nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, m.unavail, "memory is unavailable on this toold (%v); continue without it", m.unavail)
	}
	return op.run(m, ctx, memory.Owner{Workspace: m.workspace, Conversation: call.ConversationID}, call, sink)
}

func bind(call *tools.Call, v any) error {
	if err := call.Bind(v); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "arguments of %s do not fit its schema: %v", call.Operation, err)
	}
	return nil
}

func str(call *tools.Call, k string) string {
	s, _ := call.Args[k].(string)
	return s
}

// --- store_memory -----------------------------------------------------------

var storeOp = &operation{
	name:        "store_memory",
	description: "Store a memory: a fact, decision, preference or lesson worth knowing in later conversations. Returns its id.",
	schema: func(l memory.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "content": {"type": "string", "minLength": 1, "maxLength": %d, "description": "What to remember, self-contained (at most %d bytes). Never secrets."},
    "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": %d}, "maxItems": %d, "description": "Labels to filter by later, e.g. [\"build\", \"preference\"]."},
    "scope": {"type": "string", "enum": ["conversation", "workspace", "global"], "description": "Who sees it: this conversation only, every conversation in this workspace (default), or every conversation."}
  },
  "required": ["content"],
  "additionalProperties": false
}`, l.MemoryBytes, l.MemoryBytes, l.TagChars, l.Tags)
	},
	describe: func(call *tools.Call) string { return "Storing memory: " + tools.Clip(str(call, "content"), 50) },
	run: func(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Content string   `json:"content"`
			Tags    []string `json:"tags"`
			Scope   string   `json:"scope"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		mem, err := m.store.Put(ctx, o, a.Content, a.Tags, memory.Scope(a.Scope))
		if err != nil {
			return nil, err
		}
		return &tools.Result{
			Text:       fmt.Sprintf("Stored memory %s (%s scope).", mem.ID, mem.Scope),
			Structured: map[string]any{"id": mem.ID, "scope": string(mem.Scope), "created": mem.Created.Format(time.RFC3339)},
		}, nil
	},
}

// --- search_memory ----------------------------------------------------------

const filterProps = `"tags": {"type": "array", "items": {"type": "string"}, "maxItems": %d, "description": "Only memories carrying all of these tags."},
    "scope": {"type": "string", "enum": ["conversation", "workspace", "global"], "description": "Only this scope; default: every scope you can see."}`

var searchOp = &operation{
	name:        "search_memory",
	description: "Search memories by words (stemmed full-text search, best matches first). Returns ids, snippets with the matched words marked, scores, tags and dates.",
	schema: func(l memory.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Words to look for; any of them matches, more matches rank higher."},
    `+filterProps+`,
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many results (default 10)."}
  },
  "required": ["query"],
  "additionalProperties": false
}`, l.Tags)
	},
	describe: func(call *tools.Call) string { return "Searching memory: " + tools.Clip(str(call, "query"), 60) },
	run: func(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Query string   `json:"query"`
			Tags  []string `json:"tags"`
			Scope string   `json:"scope"`
			Limit int      `json:"limit"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if a.Limit == 0 {
			a.Limit = 10
		}
		hits, info, err := m.store.Search(ctx, o, a.Query, memory.Filter{Scope: memory.Scope(a.Scope), Tags: a.Tags}, a.Limit)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		results := make([]any, 0, len(hits))
		if len(hits) == 0 {
			fmt.Fprintf(&b, "No memory matches %q.", a.Query)
		} else {
			fmt.Fprintf(&b, "%s %q, best first:\n", plural(len(hits), "memory matches", "memories match"), a.Query)
		}
		for i, h := range hits {
			fmt.Fprintf(&b, "%d. [%s] %s\n   (%s%s)\n", i+1, h.ID, oneLine(h.Snippet), relevance(h.Score, hits[0].Score), facts(h.Memory))
			results = append(results, map[string]any{
				"id": h.ID, "snippet": h.Snippet, "score": h.Score, "tags": nonNil(h.Tags), "scope": string(h.Scope),
				"created": h.Created.Format(time.RFC3339),
			})
		}
		if info.Note != "" {
			b.WriteString("Note: " + info.Note + "\n")
		}
		return &tools.Result{
			Text:       strings.TrimRight(b.String(), "\n"),
			Structured: map[string]any{"results": results, "ranking": info.Ranking},
			Metadata:   map[string]any{"ranking": info.Ranking},
		}, nil
	},
}

// plural is "1 memory matches", "2 memories match".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// relevance shows a hit's score for people and models: as a percentage of
// the best hit's (the raw scores are rank-fusion or BM25 figures such as
// 2.38e-06 that mean nothing alone; they stay in the structured result).
func relevance(score, best float64) string {
	if best <= 0 || score < 0 {
		return fmt.Sprintf("score %.3g", score)
	}
	return fmt.Sprintf("relevance %.0f%%", 100*score/best)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func facts(m memory.Memory) string {
	s := "; " + string(m.Scope) + "; " + m.Created.Format("2006-01-02")
	if len(m.Tags) > 0 {
		s += "; tags: " + strings.Join(m.Tags, ", ")
	}
	return s
}

func nonNil(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

// --- list_memories ----------------------------------------------------------

var listOp = &operation{
	name:        "list_memories",
	description: "List the memories you can see, newest first, optionally by scope and tags.",
	schema: func(l memory.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    `+filterProps+`,
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many (default 20)."},
    "offset": {"type": "integer", "minimum": 0, "description": "Skip this many (to page)."}
  },
  "additionalProperties": false
}`, l.Tags)
	},
	describe: func(call *tools.Call) string {
		if s := str(call, "scope"); s != "" {
			return "Listing " + s + " memories"
		}
		return "Listing memories"
	},
	run: func(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Tags   []string `json:"tags"`
			Scope  string   `json:"scope"`
			Limit  int      `json:"limit"`
			Offset int      `json:"offset"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if a.Limit == 0 {
			a.Limit = 20
		}
		ms, total, err := m.store.List(ctx, o, memory.Filter{Scope: memory.Scope(a.Scope), Tags: a.Tags}, a.Limit, a.Offset)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		items := make([]any, 0, len(ms))
		switch {
		case total == 0:
			b.WriteString("No memories.")
		case len(ms) == 0:
			fmt.Fprintf(&b, "No memories from offset %d; there are %d.", a.Offset, total)
		default:
			fmt.Fprintf(&b, "Memories %d-%d of %d, newest first:\n", a.Offset+1, a.Offset+len(ms), total)
		}
		for i, mem := range ms {
			fmt.Fprintf(&b, "%d. [%s] %s\n   (%s)\n", a.Offset+i+1, mem.ID, excerpt(mem.Content, 300), strings.TrimPrefix(facts(mem), "; "))
			items = append(items, map[string]any{"id": mem.ID, "content": mem.Content, "tags": nonNil(mem.Tags), "scope": string(mem.Scope),
				"created": mem.Created.Format(time.RFC3339), "updated": mem.Updated.Format(time.RFC3339)})
		}
		res := &tools.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: map[string]any{"memories": items, "total": total}}
		if next := a.Offset + len(ms); next < total {
			res.Text += fmt.Sprintf("\n(%d more: list_memories with offset %d)", total-next, next)
			res.Truncation = &tools.Truncation{ShownItems: uint64(len(ms)), TotalItems: uint64(total),
				Continuation: fmt.Sprintf("list_memories with offset %d", next)}
		}
		return res, nil
	},
}

func excerpt(s string, n int) string {
	s = oneLine(s)
	if len(s) <= n {
		return s
	}
	return tools.Clip(s, n)
}

// --- update_memory, delete_memory ------------------------------------------

var updateOp = &operation{
	name:        "update_memory",
	description: "Change a memory's content and/or tags (tags replace the old ones) by its id.",
	schema: func(l memory.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "minLength": 1, "description": "The memory's id (mem-...)."},
    "content": {"type": "string", "minLength": 1, "maxLength": %d, "description": "The new content."},
    "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": %d}, "maxItems": %d, "description": "The new tags."}
  },
  "required": ["id"],
  "additionalProperties": false
}`, l.MemoryBytes, l.TagChars, l.Tags)
	},
	describe: func(call *tools.Call) string { return "Updating memory: " + tools.Clip(str(call, "id"), 40) },
	run: func(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			ID      string    `json:"id"`
			Content *string   `json:"content"`
			Tags    *[]string `json:"tags"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		var tags []string
		if a.Tags != nil {
			tags = nonNil(*a.Tags)
		}
		mem, err := m.store.Update(ctx, o, a.ID, a.Content, tags)
		if err != nil {
			return nil, err
		}
		return &tools.Result{
			Text:       fmt.Sprintf("Updated memory %s.", mem.ID),
			Structured: map[string]any{"id": mem.ID, "tags": nonNil(mem.Tags), "updated": mem.Updated.Format(time.RFC3339)},
		}, nil
	},
}

var deleteOp = &operation{
	name:        "delete_memory",
	description: "Delete a memory by its id.",
	schema: func(memory.Limits) string {
		return `{
  "type": "object",
  "properties": {"id": {"type": "string", "minLength": 1, "description": "The memory's id (mem-...)."}},
  "required": ["id"],
  "additionalProperties": false
}`
	},
	describe: func(call *tools.Call) string { return "Deleting memory: " + tools.Clip(str(call, "id"), 40) },
	run: func(m *MemoryOperations, ctx context.Context, o memory.Owner, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		id := str(call, "id")
		if err := m.store.Delete(ctx, o, id); err != nil {
			return nil, err
		}
		return &tools.Result{Text: fmt.Sprintf("Deleted memory %s.", id), Structured: map[string]any{"id": id, "deleted": true}}, nil
	},
}
