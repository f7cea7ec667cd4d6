package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
)

// Config configures a Store.
type Config struct {
	// Backend stores the rows; the Store closes it.
	Backend Backend
	// Limits bound what may be stored.
	Limits Limits
	// Embedder, when set, adds semantic ranking: memories are embedded when
	// stored or changed, and searches fuse the full-text ranking with the
	// nearest vectors by reciprocal rank fusion. nil: full text only.
	Embedder Embedder
	// Logger receives failures of the embedder; nil discards them.
	Logger *slog.Logger
	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
}

// Store is memory's policy over a Backend. It is safe for concurrent use.
type Store struct {
	b      Backend
	lim    Limits
	emb    Embedder
	log    *slog.Logger
	now    func() time.Time
	hub    hub
	closed chan struct{}

	// listen runs the backend's ListenTodos from the first Watch until
	// Close, publishing other toolds' changes to this Store's watchers.
	listen     sync.Once
	stopListen context.CancelFunc
	listenDone chan struct{}
}

// New returns a Store over cfg.Backend.
func New(cfg Config) *Store {
	s := &Store{b: cfg.Backend, lim: cfg.Limits.withDefaults(), emb: cfg.Embedder, log: cfg.Logger, now: cfg.Now, closed: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.hub.init()
	return s
}

// Limits returns the limits in force.
func (s *Store) Limits() Limits { return s.lim }

// Close ends every watch and closes the backend.
func (s *Store) Close() error {
	s.hub.close()
	s.listen.Do(func() {}) // no listener starts after this
	if s.stopListen != nil {
		s.stopListen()
		<-s.listenDone
	}
	return s.b.Close()
}

// startListening starts the listener of other toolds' todo changes, once.
func (s *Store) startListening() {
	s.listen.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopListen, s.listenDone = cancel, make(chan struct{})
		go func() {
			defer close(s.listenDone)
			err := s.b.ListenTodos(ctx, func(c TodoChange) { s.changedElsewhere(ctx, c) })
			if err != nil && ctx.Err() == nil {
				s.log.Warn("memory: listening for other toolds' todo changes failed; watches see this toold's changes only", "err", err)
			}
		}()
	})
}

// changedElsewhere reads a list another toold saved (or, on Resync, every
// watched list) and publishes it to the watchers it concerns; the hub
// drops versions a watcher has already seen.
func (s *Store) changedElsewhere(ctx context.Context, c TodoChange) {
	type key struct{ ws, conv string }
	var keys []key
	for _, w := range s.hub.watched() {
		if c.Resync || (w.workspace == c.Workspace && (w.conversation == "" || w.conversation == c.Conversation)) {
			k := key{w.workspace, w.conversation}
			if !c.Resync {
				k.conv = c.Conversation
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		if k.conv != "" {
			l, err := s.b.Todos(ctx, k.ws, k.conv)
			if err != nil {
				s.log.Warn("memory: reading a todo list another toold changed", "err", err)
				continue
			}
			s.hub.publish(l)
			continue
		}
		ls, err := s.b.TodoLists(ctx, k.ws, 100)
		if err != nil {
			s.log.Warn("memory: reading todo lists after a reconnect", "err", err)
			continue
		}
		for _, l := range ls {
			s.hub.publish(l)
		}
	}
}

// Put stores a new memory in scope (default workspace) for o and returns
// it. Content that looks like a credential is refused (ErrDenied), as is
// content or tags beyond the limits (ErrInvalidArgument) or a full scope
// (ErrResourceExhausted).
func (s *Store) Put(ctx context.Context, o Owner, content string, tags []string, scope Scope) (*Memory, error) {
	if scope == "" {
		scope = ScopeWorkspace
	}
	if _, err := ParseScope(string(scope)); err != nil {
		return nil, err
	}
	if err := s.checkOwner(o, scope); err != nil {
		return nil, err
	}
	content, err := s.checkContent(content)
	if err != nil {
		return nil, err
	}
	if tags, err = s.checkTags(tags); err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	ws, conv := place(o, scope)
	m := &Memory{ID: newID(), Content: content, Tags: tags, Scope: scope, Workspace: ws, Conversation: conv, Created: now, Updated: now}
	vec := s.embed(ctx, content, tags)
	if err := s.b.Insert(ctx, m, vec, s.lim); err != nil {
		return nil, s.backendErr(ctx, err, "store the memory")
	}
	return m, nil
}

// Update changes the content and/or the tags of the memory id visible to o.
// At least one of content and tags must be non-nil; tags replace the old
// ones.
func (s *Store) Update(ctx context.Context, o Owner, id string, content *string, tags []string) (*Memory, error) {
	if content == nil && tags == nil {
		return nil, errdefs.Invalid("", "anyOf", "update_memory needs content or tags (or both) to change")
	}
	var vec []float32
	if content != nil {
		c, err := s.checkContent(*content)
		if err != nil {
			return nil, err
		}
		content = &c
	}
	if tags != nil {
		t, err := s.checkTags(tags)
		if err != nil {
			return nil, err
		}
		tags = t
		if tags == nil {
			tags = []string{}
		}
	}
	if content != nil && s.emb != nil {
		t := tags
		if t == nil {
			if old, err := s.b.Get(ctx, o, []string{id}); err == nil && len(old) == 1 {
				t = old[0].Tags
			}
		}
		vec = s.embed(ctx, *content, t)
	}
	m, err := s.b.Update(ctx, o, id, content, tags, vec, s.now().UTC().Truncate(time.Microsecond), s.lim)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, notFound(id)
		}
		return nil, s.backendErr(ctx, err, "update the memory")
	}
	return m, nil
}

// Delete removes the memory id visible to o.
func (s *Store) Delete(ctx context.Context, o Owner, id string) error {
	if err := s.b.Delete(ctx, o, id); err != nil {
		if errors.Is(err, ErrNotFound) {
			return notFound(id)
		}
		return s.backendErr(ctx, err, "delete the memory")
	}
	return nil
}

// List returns the memories visible to o that match f, newest first.
func (s *Store) List(ctx context.Context, o Owner, f Filter, limit, offset int) ([]Memory, int, error) {
	f, err := s.checkFilter(f)
	if err != nil {
		return nil, 0, err
	}
	ms, n, err := s.b.List(ctx, o, f, max(limit, 1), max(offset, 0))
	if err != nil {
		return nil, 0, s.backendErr(ctx, err, "list memories")
	}
	return ms, n, nil
}

// SearchInfo says how a search ranked its results.
type SearchInfo struct {
	// Ranking is "fulltext" or "fulltext+semantic".
	Ranking string
	// Note, when set, says why semantic ranking was not used although it is
	// configured.
	Note string
}

// Search returns the memories visible to o that match f, ranked against
// query, best first, at most limit.
func (s *Store) Search(ctx context.Context, o Owner, query string, f Filter, limit int) ([]Hit, SearchInfo, error) {
	info := SearchInfo{Ranking: "fulltext"}
	f, err := s.checkFilter(f)
	if err != nil {
		return nil, info, err
	}
	terms := searchTerms(query)
	if len(terms) == 0 {
		if len(Terms(query)) > 0 {
			return nil, info, errdefs.Invalid("/query", "minLength", "the query has only common words (the, is, what...), which match everything; search for the specific words a memory would contain")
		}
		return nil, info, errdefs.Invalid("/query", "minLength", "the query has no words to search for; give one or more words, or use list_memories to see everything")
	}
	limit = max(limit, 1)
	if s.emb == nil {
		hits, err := s.b.Search(ctx, o, f, terms, limit)
		if err != nil {
			return nil, info, s.backendErr(ctx, err, "search memories")
		}
		return hits, info, nil
	}
	// Fuse the full-text and the vector rankings over deeper candidate
	// lists than the caller wants.
	depth := max(limit*4, 50)
	text, err := s.b.Search(ctx, o, f, terms, depth)
	if err != nil {
		return nil, info, s.backendErr(ctx, err, "search memories")
	}
	qv, err := s.emb.Embed(ctx, []string{query})
	if err != nil || len(qv) != 1 {
		s.log.WarnContext(ctx, "memory: embedding the query failed; full-text ranking only", "err", err)
		info.Note = "semantic ranking unavailable (the embeddings endpoint failed); results are full-text only"
		return text[:min(limit, len(text))], info, nil
	}
	near, err := nearest(ctx, s.b, o, f, normalized(qv[0]), depth)
	if err != nil {
		return nil, info, s.backendErr(ctx, err, "search memories")
	}
	info.Ranking = "fulltext+semantic"
	hits, err := s.fuse(ctx, o, text, near, limit)
	if err != nil {
		return nil, info, s.backendErr(ctx, err, "search memories")
	}
	return hits, info, nil
}

// Todos returns o's todo list.
func (s *Store) Todos(ctx context.Context, o Owner) (*TodoList, error) {
	l, err := s.b.Todos(ctx, o.Workspace, o.Conversation)
	if err != nil {
		return nil, s.backendErr(ctx, err, "read the todo list")
	}
	return l, nil
}

// TodoLists returns the todo lists of workspace's conversations, most
// recently changed first, at most limit.
func (s *Store) TodoLists(ctx context.Context, workspace string, limit int) ([]*TodoList, error) {
	ls, err := s.b.TodoLists(ctx, workspace, max(limit, 1))
	if err != nil {
		return nil, s.backendErr(ctx, err, "read todo lists")
	}
	return ls, nil
}

// WriteTodos replaces o's todo list with todos (ids are assigned where
// missing) and publishes the new list to watchers.
func (s *Store) WriteTodos(ctx context.Context, o Owner, todos []Todo) (*TodoList, error) {
	if err := s.checkOwner(o, ScopeConversation); err != nil {
		return nil, err
	}
	todos, err := checkTodos(todos, true)
	if err != nil {
		return nil, err
	}
	return s.saveTodos(ctx, o, func(l *TodoList) (*TodoList, error) {
		l.Todos = todos
		return l, nil
	})
}

// UpdateTodos changes the todos of o's list named by the ids of changes:
// each non-empty field of a change replaces the todo's field. An id not in
// the list is an error and nothing changes.
func (s *Store) UpdateTodos(ctx context.Context, o Owner, changes []Todo) (*TodoList, error) {
	if err := s.checkOwner(o, ScopeConversation); err != nil {
		return nil, err
	}
	changes, err := checkTodos(changes, false)
	if err != nil {
		return nil, err
	}
	return s.saveTodos(ctx, o, func(l *TodoList) (*TodoList, error) {
		return applyTodoChanges(l, changes)
	})
}

func (s *Store) saveTodos(ctx context.Context, o Owner, change func(*TodoList) (*TodoList, error)) (*TodoList, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	l, err := s.b.SaveTodos(ctx, o.Workspace, o.Conversation, func(l *TodoList) (*TodoList, error) {
		l, err := change(l)
		if err != nil {
			return nil, err
		}
		l.Updated = now
		return l, nil
	})
	if err != nil {
		return nil, s.backendErr(ctx, err, "save the todo list")
	}
	s.hub.publish(l)
	return l, nil
}

// Watch returns the changes of the todo list of (workspace, conversation) —
// of every conversation in workspace when conversation is "" — as they
// happen, until stop is called or the Store closes (then the channel is
// closed). Changes made through other toolds on the same database arrive
// too where the backend can tell (PostgreSQL: LISTEN/NOTIFY). A version is
// delivered at most once; a watcher that falls more than 64 changes behind
// loses the oldest ones; the latest change always arrives.
func (s *Store) Watch(workspace, conversation string) (changes <-chan *TodoList, stop func()) {
	ch, stop := s.hub.subscribe(workspace, conversation)
	s.startListening()
	return ch, stop
}

func (s *Store) checkOwner(o Owner, scope Scope) error {
	if o.Workspace == "" && scope != ScopeGlobal {
		return errdefs.New(errdefs.ErrInternal, "memory: no workspace")
	}
	if o.Conversation == "" && scope == ScopeConversation {
		return errdefs.Invalid("/scope", "conversation", "this call has no conversation id, so it cannot keep conversation memories or todos; use scope workspace")
	}
	return nil
}

func (s *Store) checkContent(c string) (string, error) {
	c = strings.TrimSpace(c)
	switch {
	case c == "":
		return "", errdefs.Invalid("/content", "minLength", "content is empty; write what should be remembered")
	case len(c) > s.lim.MemoryBytes:
		return "", errdefs.Invalid("/content", "maxLength", "content is %d bytes; a memory holds at most %d. Keep the lesson, not the material: summarize, or split it into several memories", len(c), s.lim.MemoryBytes)
	case !utf8.ValidString(c) || strings.ContainsRune(c, 0):
		return "", errdefs.Invalid("/content", "format", "content must be text (valid UTF-8 without NUL bytes)")
	}
	if what, ok := Credential(c); ok {
		return "", &errdefs.Error{Class: errdefs.ErrDenied, Field: "/content", Rule: "memory:no-credentials",
			Msg: fmt.Sprintf("refused: the content looks like it contains %s. Memories are kept and shared beyond this conversation, so secrets must never be stored; store where the secret is kept (a file, a variable name, a vault path) instead of its value", what)}
	}
	return c, nil
}

func (s *Store) checkTags(tags []string) ([]string, error) {
	if len(tags) > s.lim.Tags {
		return nil, errdefs.Invalid("/tags", "maxItems", "%d tags; at most %d", len(tags), s.lim.Tags)
	}
	var out []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return nil, errdefs.Invalid("/tags", "minLength", "a tag is empty")
		case utf8.RuneCountInString(t) > s.lim.TagChars:
			return nil, errdefs.Invalid("/tags", "maxLength", "tag %q is longer than %d characters", t, s.lim.TagChars)
		case strings.ContainsRune(t, 0) || !utf8.ValidString(t):
			return nil, errdefs.Invalid("/tags", "format", "tags must be text")
		}
		if what, ok := Credential(t); ok {
			return nil, &errdefs.Error{Class: errdefs.ErrDenied, Field: "/tags", Rule: "memory:no-credentials",
				Msg: fmt.Sprintf("refused: a tag looks like it contains %s; never store secrets", what)}
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *Store) checkFilter(f Filter) (Filter, error) {
	if _, err := ParseScope(string(f.Scope)); err != nil {
		return f, err
	}
	if len(f.Tags) > s.lim.Tags {
		return f, errdefs.Invalid("/tags", "maxItems", "%d tags; at most %d", len(f.Tags), s.lim.Tags)
	}
	return f, nil
}

// embed returns the embedding of a memory, or nil when there is no
// embedder or it failed (the memory is then found by full text only).
func (s *Store) embed(ctx context.Context, content string, tags []string) []float32 {
	if s.emb == nil {
		return nil
	}
	text := content
	if len(tags) > 0 {
		text += "\n" + strings.Join(tags, ", ")
	}
	v, err := s.emb.Embed(ctx, []string{text})
	if err != nil || len(v) != 1 {
		s.log.WarnContext(ctx, "memory: embedding failed; the memory is found by full text only", "err", err)
		return nil
	}
	return normalized(v[0])
}

// backendErr classifies a backend's error: classified errors and context
// ends pass through, others become ErrUnavailable with a generic message
// (the cause is kept for the log).
func (s *Store) backendErr(ctx context.Context, err error, what string) error {
	if errdefs.Class(err) != nil {
		return err
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errdefs.Wrap(errdefs.ErrTimeout, err, "timed out trying to %s", what)
		}
		return errdefs.Wrap(errdefs.ErrCanceled, err, "canceled while trying to %s", what)
	}
	s.log.ErrorContext(ctx, "memory backend failed", "op", what, "err", err)
	return errdefs.Wrap(errdefs.ErrUnavailable, err, "memory storage could not %s; try again later", what)
}
