// Package memory keeps what agents learn between conversations — memories
// they store and search by their words — and each conversation's todo list.
//
// A Store holds the policy of memory (scopes and who sees what, size limits,
// refusing credentials, optional semantic ranking, live todo updates) over a
// Backend that only stores rows: SQLite (the default, a file under toold's
// state directory; see OpenSQLite) or PostgreSQL (agents on many machines
// sharing one memory; see OpenPostgres). Both backends pass the same test
// suite.
//
// Scopes. A memory belongs to one scope: "conversation" (seen only by the
// conversation that stored it, in this workspace), "workspace" (seen by every
// conversation in the same workspace) or "global" (seen by every
// conversation). A memory outside a caller's view is, to that caller, a
// memory that does not exist: reads, updates and deletes of it fail exactly
// as for an unknown id. Todo lists belong to one conversation.
package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
)

// Scope is who sees a memory.
type Scope string

// Scopes.
const (
	ScopeConversation Scope = "conversation"
	ScopeWorkspace    Scope = "workspace"
	ScopeGlobal       Scope = "global"
)

// ParseScope checks s; "" is returned as "".
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case "", ScopeConversation, ScopeWorkspace, ScopeGlobal:
		return Scope(s), nil
	}
	return "", errdefs.Invalid("/scope", "enum", "scope %q: use conversation, workspace or global", s)
}

// Owner is who is asking: the workspace and conversation of a call. It
// decides which memories are visible and where a new one belongs.
type Owner struct {
	// Workspace identifies the workspace (its absolute path, or the
	// configured memory.workspace_id).
	Workspace string
	// Conversation is the call's conversation id.
	Conversation string
}

// Memory is one stored memory.
type Memory struct {
	ID      string
	Content string
	Tags    []string
	Scope   Scope
	// Workspace is empty for global memories; Conversation is set only for
	// conversation memories.
	Workspace, Conversation string
	Created, Updated        time.Time
}

// Hit is one search result.
type Hit struct {
	Memory
	// Snippet is a short excerpt with the matched words marked **like
	// this**.
	Snippet string
	// Score orders results, higher first. For full-text ranking it is the
	// backend's relevance (bm25 or ts_rank); with semantic ranking it is
	// the reciprocal-rank-fusion score.
	Score float64
}

// Filter narrows a list or search to a scope (empty: every visible scope)
// and to memories carrying every one of Tags.
type Filter struct {
	Scope Scope
	Tags  []string
}

// Limits bound what may be stored. Zero fields take DefaultLimits.
type Limits struct {
	// MemoryBytes caps one memory's content.
	MemoryBytes int
	// ScopeMemories caps the memories of one scope (one conversation's, one
	// workspace's, or the global ones).
	ScopeMemories int
	// ScopeBytes caps the content bytes of one scope.
	ScopeBytes int64
	// Tags caps the tags of a memory; TagChars the characters of one.
	Tags, TagChars int
}

// DefaultLimits are used where a Limits field is zero.
var DefaultLimits = Limits{
	MemoryBytes:   8 << 10,
	ScopeMemories: 100_000,
	ScopeBytes:    64 << 20,
	Tags:          16,
	TagChars:      64,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MemoryBytes > 0 {
		d.MemoryBytes = l.MemoryBytes
	}
	if l.ScopeMemories > 0 {
		d.ScopeMemories = l.ScopeMemories
	}
	if l.ScopeBytes > 0 {
		d.ScopeBytes = l.ScopeBytes
	}
	if l.Tags > 0 {
		d.Tags = l.Tags
	}
	if l.TagChars > 0 {
		d.TagChars = l.TagChars
	}
	return d
}

// ErrNotFound is wrapped by errors for an id that is unknown or not visible
// to the caller; its class is errdefs.ErrInvalidArgument.
var ErrNotFound = errors.New("memory not found")

func notFound(id string) error {
	return &errdefs.Error{Class: errdefs.ErrInvalidArgument, Field: "/id", Rule: "exists", Cause: ErrNotFound,
		Msg: fmt.Sprintf("no memory %q in your view (it does not exist, or belongs to another conversation or workspace); list_memories or search_memory shows the ids you can use", id)}
}

// scopeFull is the error of an insert or update that would overflow a scope.
func scopeFull(scope Scope, count int, bytes int64, l Limits) error {
	return errdefs.New(errdefs.ErrResourceExhausted,
		"the %s scope is full (%d memories, %d bytes; limits %d memories, %d bytes): delete_memory or update_memory memories that are no longer useful, or store in another scope",
		scope, count, bytes, l.ScopeMemories, l.ScopeBytes)
}

// Backend stores memories and todo lists. Implementations are safe for
// concurrent use, and every method that changes rows does so atomically.
// Visibility (Owner) and limits are applied by the backend in the same
// transaction as the change, so concurrent calls cannot overflow a scope.
type Backend interface {
	// Insert stores m (ID, Scope, Workspace, Conversation, times set by the
	// caller), unless its scope would then exceed lim's ScopeMemories or
	// ScopeBytes (an ErrResourceExhausted error).
	Insert(ctx context.Context, m *Memory, vec []float32, lim Limits) error
	// Update changes the content (when content is non-nil; vec is its new
	// embedding, or nil) and the tags (when tags is non-nil) of the memory
	// id visible to o, and returns it; an unknown or invisible id is
	// ErrNotFound.
	Update(ctx context.Context, o Owner, id string, content *string, tags []string, vec []float32, now time.Time, lim Limits) (*Memory, error)
	// Delete removes the memory id visible to o.
	Delete(ctx context.Context, o Owner, id string) error
	// Get returns the memories ids visible to o, in no particular order;
	// ids not visible are left out.
	Get(ctx context.Context, o Owner, ids []string) ([]Memory, error)
	// List returns visible memories matching f, newest first, from offset,
	// at most limit, and the number matching.
	List(ctx context.Context, o Owner, f Filter, limit, offset int) ([]Memory, int, error)
	// Search ranks visible memories matching f that contain any of terms
	// (words, already split), best first, at most limit.
	Search(ctx context.Context, o Owner, f Filter, terms []string, limit int) ([]Hit, error)
	// Vectors calls fn with the embedding of every visible memory matching
	// f that has one.
	Vectors(ctx context.Context, o Owner, f Filter, fn func(id string, vec []float32)) error
	// Todos returns the conversation's todo list (empty, version 0, when it
	// has none).
	Todos(ctx context.Context, workspace, conversation string) (*TodoList, error)
	// SaveTodos reads the conversation's list, passes it to change, and
	// stores what change returns with Version one higher, atomically; an
	// error from change is returned and nothing is stored.
	SaveTodos(ctx context.Context, workspace, conversation string, change func(*TodoList) (*TodoList, error)) (*TodoList, error)
	// TodoLists returns the workspace's lists, most recently changed first,
	// at most limit.
	TodoLists(ctx context.Context, workspace string, limit int) ([]*TodoList, error)
	// ListenTodos calls changed for every todo list saved through any
	// toold sharing the database, until ctx ends, and returns ctx's error.
	// A lost connection is reconnected; afterwards changed gets a
	// TodoChange with Resync set (changes may have been missed). A backend
	// that one toold alone uses (SQLite) returns nil at once: its Store
	// sees every change itself.
	ListenTodos(ctx context.Context, changed func(TodoChange)) error
	// Close releases the backend.
	Close() error
}

// TodoChange names a todo list saved through some toold.
type TodoChange struct {
	Workspace, Conversation string
	Version                 uint64
	// Resync: changes may have been missed (a reconnect); every watched
	// list should be read again.
	Resync bool
}

// newID returns a fresh memory id.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mem-" + hex.EncodeToString(b[:])
}

// Terms splits a query into the words a full-text search looks for:
// letters and digits, lower-cased, at most 32 of them, each at most 64
// runes. Punctuation separates words, so nothing in a query reaches a
// backend's query syntax.
func Terms(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if utf8.RuneCountInString(f) > 64 {
			f = string([]rune(f)[:64])
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
		if len(out) == 32 {
			break
		}
	}
	return out
}

// stopwords are the words of PostgreSQL's english text-search
// configuration (Snowball's list) that it leaves out of every query; the
// SQLite backend leaves them out too, so that both rank alike and a
// question-like query ("what is the build flag") does not match, and rank,
// every memory.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves what which
		who whom this that these those am is are was were be been being have has had having do does did
		doing a an the and but if or because as until while of at by for with about against between into
		through during before after above below to from up down in out on off over under again further then
		once here there when where why how all any both each few more most other some such no nor not only
		own same so than too very s t can will just don should now`) {
		stopwords[w] = true
	}
}

// searchTerms are the words of q a search looks for: Terms without
// stopwords.
func searchTerms(q string) []string {
	var out []string
	for _, t := range Terms(q) {
		if !stopwords[t] {
			out = append(out, t)
		}
	}
	return out
}

// visibleScopes returns the scopes f admits.
func (f Filter) scopes() []Scope {
	if f.Scope != "" {
		return []Scope{f.Scope}
	}
	return []Scope{ScopeConversation, ScopeWorkspace, ScopeGlobal}
}

// place returns where a memory of scope stored by o belongs.
func place(o Owner, s Scope) (workspace, conversation string) {
	switch s {
	case ScopeConversation:
		return o.Workspace, o.Conversation
	case ScopeWorkspace:
		return o.Workspace, ""
	}
	return "", ""
}
