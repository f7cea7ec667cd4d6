package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/memory/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// backend opens one kind of Backend at a location (a file, a DSN); the
// same location opened again sees the same data.
type backend struct {
	name     string
	location func(t *testing.T) string
	open     func(ctx context.Context, loc string) (memory.Backend, error)
}

var backends = []backend{
	{
		name:     "sqlite",
		location: func(t *testing.T) string { return filepath.Join(t.TempDir(), "state", "memory.db") },
		open: func(ctx context.Context, loc string) (memory.Backend, error) {
			return memory.OpenSQLite(ctx, loc)
		},
	},
	{
		name:     "postgres",
		location: func(t *testing.T) string { return pgtest.NewDatabase(t) },
		open: func(ctx context.Context, loc string) (memory.Backend, error) {
			return memory.OpenPostgres(ctx, loc)
		},
	},
}

// forEach runs f once per backend, each with a fresh, empty store.
func forEach(t *testing.T, f func(t *testing.T, b backend, loc string, s *memory.Store)) {
	forEachWith(t, memory.Config{}, f)
}

func forEachWith(t *testing.T, cfg memory.Config, f func(t *testing.T, b backend, loc string, s *memory.Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			loc := b.location(t)
			s := openStore(t, b, loc, cfg)
			f(t, b, loc, s)
		})
	}
}

func openStore(t *testing.T, b backend, loc string, cfg memory.Config) *memory.Store {
	t.Helper()
	be, err := b.open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend = be
	s := memory.New(cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	alice = memory.Owner{Workspace: "/ws/one", Conversation: "alice"}
	bob   = memory.Owner{Workspace: "/ws/one", Conversation: "bob"}
	carol = memory.Owner{Workspace: "/ws/two", Conversation: "carol"}
)

func put(t *testing.T, s *memory.Store, o memory.Owner, content string, scope memory.Scope, tags ...string) *memory.Memory {
	t.Helper()
	m, err := s.Put(context.Background(), o, content, tags, scope)
	if err != nil {
		t.Fatalf("put %q: %v", content, err)
	}
	return m
}

func search(t *testing.T, s *memory.Store, o memory.Owner, q string, f memory.Filter) []memory.Hit {
	t.Helper()
	hs, _, err := s.Search(context.Background(), o, q, f, 10)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return hs
}

func ids(hs []memory.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

func TestSearchRanksAndMarks(t *testing.T) {
	forEach(t, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		a := put(t, s, alice, "The integration tests need PostgreSQL running on a unix socket.", "", "testing")
		b := put(t, s, alice, "Deploys go through the staging cluster first; PostgreSQL migrations run there.", "", "deploy")
		c := put(t, s, alice, "Prefer table tests with t.Run in Go packages.", "", "testing", "go")

		cases := []struct {
			name  string
			query string
			f     memory.Filter
			want  []string // ids in order; nil means exactly none
			first string
		}{
			{"one word", "postgresql", memory.Filter{}, []string{a.ID, b.ID}, ""},
			{"stemmed", "test", memory.Filter{}, []string{a.ID, c.ID}, ""},
			{"more words rank first", "postgresql unix socket", memory.Filter{}, nil, a.ID},
			{"tag filter", "postgresql", memory.Filter{Tags: []string{"deploy"}}, []string{b.ID}, ""},
			{"two tags", "tests", memory.Filter{Tags: []string{"testing", "go"}}, []string{c.ID}, ""},
			{"a word of a tag", "deploy", memory.Filter{}, []string{b.ID}, ""},
			{"punctuation is no syntax", `"postgresql" OR NEAR( -*`, memory.Filter{}, []string{a.ID, b.ID}, ""},
			{"no match", "kubernetes", memory.Filter{}, nil, ""},
			{"stopwords left out", "what is the socket", memory.Filter{}, []string{a.ID}, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				hs := search(t, s, alice, tc.query, tc.f)
				got := ids(hs)
				if tc.first != "" {
					if len(got) == 0 || got[0] != tc.first {
						t.Fatalf("first = %v, want %s", got, tc.first)
					}
					return
				}
				if !sameSet(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				for i := 1; i < len(hs); i++ {
					if hs[i].Score > hs[i-1].Score {
						t.Errorf("not ranked: %v", hs)
					}
				}
			})
		}
		hs := search(t, s, alice, "socket", memory.Filter{})
		if len(hs) != 1 || !strings.Contains(hs[0].Snippet, "**socket**") {
			t.Fatalf("snippet does not mark the word: %+v", hs)
		}
		if hs[0].Created.IsZero() || hs[0].Scope != memory.ScopeWorkspace || len(hs[0].Tags) != 1 {
			t.Fatalf("hit lacks fields: %+v", hs[0])
		}
		for _, q := range []string{" ?! ", "what is it"} {
			if _, _, err := s.Search(context.Background(), alice, q, memory.Filter{}, 10); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("query %q: %v", q, err)
			}
		}
	})
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestScopesAreIsolated(t *testing.T) {
	forEach(t, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		conv := put(t, s, alice, "alpha conversation note", memory.ScopeConversation)
		ws := put(t, s, alice, "alpha workspace note", memory.ScopeWorkspace)
		glob := put(t, s, alice, "alpha global note", memory.ScopeGlobal)
		cases := []struct {
			who  memory.Owner
			f    memory.Filter
			want []string
		}{
			{alice, memory.Filter{}, []string{conv.ID, ws.ID, glob.ID}},
			{bob, memory.Filter{}, []string{ws.ID, glob.ID}},
			{carol, memory.Filter{}, []string{glob.ID}},
			{alice, memory.Filter{Scope: memory.ScopeConversation}, []string{conv.ID}},
			{bob, memory.Filter{Scope: memory.ScopeConversation}, nil},
			{memory.Owner{Workspace: "/ws/two", Conversation: "alice"}, memory.Filter{}, []string{glob.ID}},
		}
		for _, tc := range cases {
			got := ids(search(t, s, tc.who, "alpha", tc.f))
			if !sameSet(got, tc.want) {
				t.Errorf("%v %v: search got %v, want %v", tc.who, tc.f, got, tc.want)
			}
			ms, n, err := s.List(context.Background(), tc.who, tc.f, 100, 0)
			if err != nil || n != len(tc.want) || len(ms) != len(tc.want) {
				t.Errorf("%v %v: list got %d/%d %v", tc.who, tc.f, len(ms), n, err)
			}
		}
		// Invisible memories cannot be changed or deleted, and the error is
		// the one of an unknown id.
		for _, id := range []string{conv.ID, "mem-doesnotexist"} {
			c := "changed"
			if _, err := s.Update(context.Background(), bob, id, &c, nil); !errors.Is(err, memory.ErrNotFound) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("bob updates %s: %v", id, err)
			}
			if err := s.Delete(context.Background(), bob, id); !errors.Is(err, memory.ErrNotFound) {
				t.Errorf("bob deletes %s: %v", id, err)
			}
		}
		if err := s.Delete(context.Background(), carol, ws.ID); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("carol deletes a workspace memory of another workspace: %v", err)
		}
		if got := ids(search(t, s, alice, "alpha", memory.Filter{})); len(got) != 3 {
			t.Fatalf("a refused change changed something: %v", got)
		}
	})
}

func TestUpdateDeleteList(t *testing.T) {
	forEach(t, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		ctx := context.Background()
		m := put(t, s, alice, "the build uses make", "", "build")
		c := "the build uses bazel now"
		up, err := s.Update(ctx, bob, m.ID, &c, []string{"build", "bazel"})
		if err != nil {
			t.Fatal(err)
		}
		if up.Content != c || len(up.Tags) != 2 || !up.Updated.After(m.Created) && !up.Updated.Equal(m.Created) {
			t.Fatalf("update returned %+v", up)
		}
		if got := search(t, s, alice, "bazel", memory.Filter{}); len(got) != 1 {
			t.Fatalf("new content not found: %v", got)
		}
		if got := search(t, s, alice, "make", memory.Filter{}); len(got) != 0 {
			t.Fatalf("old content still found: %v", got)
		}
		// Tags only.
		if up, err = s.Update(ctx, alice, m.ID, nil, []string{}); err != nil || len(up.Tags) != 0 || up.Content != c {
			t.Fatalf("tags-only update: %+v %v", up, err)
		}
		if _, err := s.Update(ctx, alice, m.ID, nil, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("empty update: %v", err)
		}
		for i := range 5 {
			put(t, s, alice, fmt.Sprintf("note number %d", i), "")
		}
		ms, n, err := s.List(ctx, alice, memory.Filter{}, 2, 1)
		if err != nil || n != 6 || len(ms) != 2 || ms[0].Content != "note number 3" || ms[1].Content != "note number 2" {
			t.Fatalf("list page: %d %v %v", n, ms, err)
		}
		if err := s.Delete(ctx, alice, m.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, alice, m.ID); !errors.Is(err, memory.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if got := search(t, s, alice, "bazel", memory.Filter{}); len(got) != 0 {
			t.Fatalf("deleted memory found: %v", got)
		}
	})
}

func TestCredentialsRefused(t *testing.T) {
	secrets := []string{
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
		"-----BEGIN RSA PRIVATE KEY-----",
		"aws key AKIAIOSFODNN7EXAMPLE for the deploy user",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		`{"type": "service_account", "project_id": "p"}`,
		"curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefghijkl' https://api",
		"use bearer abcdefghijklmnopqrstuvwxyz0123 for the API",
		"token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"DB_PASSWORD=hunter2hunter2",
		"export STRIPE_SECRET=\"whsec_abcdefghij\"",
		"connect with postgres://admin:s3cretpass@db.internal/app",
		"xoxb-1234567890-abcdefghijkl",
		"AIzaSyA1234567890abcdefghijklmnopqrstuv",
	}
	fine := []string{
		"The API token is rotated every week by the platform team.",
		"DB_PASSWORD is read from the environment; see .env.example",
		"API_KEY=${API_KEY}",
		"SECRET_KEY=<your-secret-here>",
		"Use the Authorization header with the token from vault path secret/ci.",
		"postgres://localhost/app has no password",
	}
	for _, c := range secrets {
		if what, ok := memory.Credential(c); !ok {
			t.Errorf("not refused: %q", c)
		} else if what == "" {
			t.Errorf("no reason for %q", c)
		}
	}
	for _, c := range fine {
		if what, ok := memory.Credential(c); ok {
			t.Errorf("refused as %s: %q", what, c)
		}
	}
	forEach(t, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		ctx := context.Background()
		_, err := s.Put(ctx, alice, secrets[2], nil, "")
		var e *errdefs.Error
		if !errors.As(err, &e) || !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(e.Msg, "AWS access key") || !strings.Contains(e.Msg, "secrets must never be stored") {
			t.Fatalf("err = %v", err)
		}
		if _, err := s.Put(ctx, alice, "fine", []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, ""); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("secret tag: %v", err)
		}
		m := put(t, s, alice, "a harmless note", "")
		if _, err := s.Update(ctx, alice, m.ID, &secrets[9], nil); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("secret update: %v", err)
		}
		if _, err := s.WriteTodos(ctx, alice, []memory.Todo{{Title: "log in", Note: secrets[9]}}); !errors.Is(err, errdefs.ErrDenied) {
			t.Fatalf("secret todo: %v", err)
		}
		if _, n, _ := s.List(ctx, alice, memory.Filter{}, 10, 0); n != 1 {
			t.Fatalf("a refused store stored something: %d", n)
		}
		if hs := search(t, s, alice, "harmless", memory.Filter{}); len(hs) != 1 || hs[0].Content != "a harmless note" {
			t.Fatalf("refused update changed the memory: %v", hs)
		}
	})
}

func TestLimits(t *testing.T) {
	lim := memory.Limits{MemoryBytes: 100, ScopeMemories: 5, ScopeBytes: 300, Tags: 2, TagChars: 8}
	forEachWith(t, memory.Config{Limits: lim}, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		ctx := context.Background()
		cases := []struct {
			name    string
			content string
			tags    []string
			scope   memory.Scope
			class   error
		}{
			{"too big", strings.Repeat("x", 101), nil, "", errdefs.ErrInvalidArgument},
			{"empty", "   ", nil, "", errdefs.ErrInvalidArgument},
			{"too many tags", "x", []string{"a", "b", "c"}, "", errdefs.ErrInvalidArgument},
			{"long tag", "x", []string{"abcdefghi"}, "", errdefs.ErrInvalidArgument},
			{"empty tag", "x", []string{" "}, "", errdefs.ErrInvalidArgument},
			{"NUL", "a\x00b", nil, "", errdefs.ErrInvalidArgument},
			{"bad scope", "x", nil, "team", errdefs.ErrInvalidArgument},
		}
		for _, tc := range cases {
			if _, err := s.Put(ctx, alice, tc.content, tc.tags, tc.scope); !errors.Is(err, tc.class) {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		// Scope bytes: 3 × 100 fills 300.
		var last *memory.Memory
		for range 3 {
			last = put(t, s, alice, strings.Repeat("y", 100), memory.ScopeConversation)
		}
		_, err := s.Put(ctx, alice, "z", nil, memory.ScopeConversation)
		if !errors.Is(err, errdefs.ErrResourceExhausted) || !strings.Contains(err.Error(), "conversation scope is full") {
			t.Fatalf("full by bytes: %v", err)
		}
		// Another conversation's scope is not full.
		put(t, s, bob, "z", memory.ScopeConversation)
		// Growing by update is refused too; shrinking works.
		big := strings.Repeat("w", 100)
		small := "w"
		if _, err := s.Update(ctx, alice, last.ID, &small, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(ctx, alice, last.ID, &big, nil); err != nil {
			t.Fatalf("back to 300 bytes: %v", err)
		}
		if err := s.Delete(ctx, alice, last.ID); err != nil {
			t.Fatal(err)
		}
		put(t, s, alice, "fits again", memory.ScopeConversation)

		// Scope count, under concurrency: exactly 5 of 20 fit.
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, full := 0, 0
		for i := range 20 {
			wg.Go(func() {
				_, err := s.Put(ctx, carol, fmt.Sprintf("n%d", i), nil, memory.ScopeWorkspace)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, errdefs.ErrResourceExhausted):
					full++
				default:
					t.Errorf("concurrent put: %v", err)
				}
			})
		}
		wg.Wait()
		if ok != 5 || full != 15 {
			t.Fatalf("concurrent puts: %d stored, %d refused; want 5 and 15", ok, full)
		}
		if _, n, _ := s.List(ctx, carol, memory.Filter{Scope: memory.ScopeWorkspace}, 100, 0); n != 5 {
			t.Fatalf("%d stored", n)
		}
	})
}

func TestPersistsAcrossReopen(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			loc := b.location(t)
			be, err := b.open(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			s := memory.New(memory.Config{Backend: be})
			m := put(t, s, alice, "the release checklist lives in RELEASING.md", memory.ScopeWorkspace)
			if _, err := s.WriteTodos(ctx, alice, []memory.Todo{{Title: "ship"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := openStore(t, b, loc, memory.Config{})
			hs := search(t, s2, bob, "checklist", memory.Filter{})
			if len(hs) != 1 || hs[0].ID != m.ID || !hs[0].Created.Equal(m.Created) {
				t.Fatalf("after reopen: %+v (stored %+v)", hs, m)
			}
			l, err := s2.Todos(ctx, alice)
			if err != nil || len(l.Todos) != 1 || l.Version != 1 {
				t.Fatalf("todos after reopen: %+v %v", l, err)
			}
		})
	}
}

func TestConcurrentWriters(t *testing.T) {
	forEach(t, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 10 {
					if _, err := s.Put(ctx, alice, fmt.Sprintf("writer%d item%d concurrency", g, i), nil, ""); err != nil {
						t.Errorf("put: %v", err)
					}
					if _, _, err := s.Search(ctx, alice, "concurrency", memory.Filter{}, 5); err != nil {
						t.Errorf("search: %v", err)
					}
				}
			})
		}
		wg.Wait()
		if _, n, err := s.List(ctx, alice, memory.Filter{}, 1, 0); err != nil || n != 80 {
			t.Fatalf("%d memories, %v", n, err)
		}
	})
}

func TestTodos(t *testing.T) {
	forEach(t, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		ctx := context.Background()
		l, err := s.Todos(ctx, alice)
		if err != nil || len(l.Todos) != 0 || l.Version != 0 {
			t.Fatalf("empty list: %+v %v", l, err)
		}
		mine, stopMine := s.Watch(alice.Workspace, alice.Conversation)
		defer stopMine()
		all, stopAll := s.Watch(alice.Workspace, "")
		defer stopAll()
		other, stopOther := s.Watch(carol.Workspace, "")
		defer stopOther()

		l, err = s.WriteTodos(ctx, alice, []memory.Todo{{Title: "Read the code"}, {Title: "Write tests"}, {ID: "ship", Title: "Ship", Status: memory.TodoPending}})
		if err != nil {
			t.Fatal(err)
		}
		if l.Version != 1 || l.Todos[0].ID != "1" || l.Todos[1].ID != "2" || l.Todos[2].ID != "ship" || l.Todos[0].Status != memory.TodoPending {
			t.Fatalf("write: %+v", l)
		}
		l, err = s.UpdateTodos(ctx, alice, []memory.Todo{{ID: "1", Status: memory.TodoCompleted}, {ID: "2", Status: memory.TodoInProgress, Note: "table tests"}})
		if err != nil {
			t.Fatal(err)
		}
		if l.Version != 2 || l.Todos[0].Status != memory.TodoCompleted || l.Todos[1].Note != "table tests" || l.Todos[1].Title != "Write tests" {
			t.Fatalf("update: %+v", l)
		}
		bad := []struct {
			name  string
			run   func() error
			class error
		}{
			{"unknown id", func() error {
				_, err := s.UpdateTodos(ctx, alice, []memory.Todo{{ID: "1", Status: memory.TodoCancelled}, {ID: "nope", Status: memory.TodoCompleted}})
				return err
			}, errdefs.ErrInvalidArgument},
			{"bad status", func() error {
				_, err := s.UpdateTodos(ctx, alice, []memory.Todo{{ID: "1", Status: "done"}})
				return err
			}, errdefs.ErrInvalidArgument},
			{"no id", func() error {
				_, err := s.UpdateTodos(ctx, alice, []memory.Todo{{Status: memory.TodoCompleted}})
				return err
			}, errdefs.ErrInvalidArgument},
			{"no title", func() error { _, err := s.WriteTodos(ctx, alice, []memory.Todo{{ID: "x"}}); return err }, errdefs.ErrInvalidArgument},
			{"duplicate id", func() error {
				_, err := s.WriteTodos(ctx, alice, []memory.Todo{{ID: "x", Title: "a"}, {ID: "x", Title: "b"}})
				return err
			}, errdefs.ErrInvalidArgument},
			{"too many", func() error {
				_, err := s.WriteTodos(ctx, alice, make([]memory.Todo, memory.MaxTodos+1))
				return err
			}, errdefs.ErrInvalidArgument},
		}
		for _, tc := range bad {
			if err := tc.run(); !errors.Is(err, tc.class) {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		l, _ = s.Todos(ctx, alice)
		if l.Version != 2 || l.Todos[0].Status != memory.TodoCompleted {
			t.Fatalf("a refused change changed the list: %+v", l)
		}
		if l, _ := s.Todos(ctx, bob); len(l.Todos) != 0 {
			t.Fatalf("bob sees alice's todos: %+v", l)
		}
		if _, err := s.WriteTodos(ctx, bob, []memory.Todo{{Title: "bob's"}}); err != nil {
			t.Fatal(err)
		}
		ls, err := s.TodoLists(ctx, alice.Workspace, 10)
		if err != nil || len(ls) != 2 || ls[0].Conversation != "bob" {
			t.Fatalf("lists: %+v %v", ls, err)
		}
		// Watchers: mine saw versions 1 and 2; all saw those and bob's.
		for _, want := range []uint64{1, 2} {
			if got := recv(t, mine); got.Version != want || got.Conversation != "alice" {
				t.Fatalf("mine: %+v, want version %d", got, want)
			}
		}
		for _, want := range []string{"alice", "alice", "bob"} {
			if got := recv(t, all); got.Conversation != want {
				t.Fatalf("all: %+v, want %s", got, want)
			}
		}
		select {
		case l := <-other:
			t.Fatalf("another workspace's watcher got %+v", l)
		case l := <-mine:
			t.Fatalf("mine got a change of another conversation: %+v", l)
		default:
		}
	})
}

func recv(t *testing.T, ch <-chan *memory.TodoList) *memory.TodoList {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no change arrived")
	}
	return nil
}

func TestWatchEndsOnClose(t *testing.T) {
	be, err := memory.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := memory.New(memory.Config{Backend: be})
	ch, stop := s.Watch("/ws", "")
	defer stop()
	s.Close()
	if _, ok := <-ch; ok {
		t.Fatal("watch not closed")
	}
	// A slow watcher never blocks a writer and gets the latest change.
	s2 := openStore(t, backends[0], filepath.Join(t.TempDir(), "m.db"), memory.Config{})
	ch2, stop2 := s2.Watch(alice.Workspace, alice.Conversation)
	defer stop2()
	for i := range 100 {
		if _, err := s2.WriteTodos(context.Background(), alice, []memory.Todo{{Title: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var last *memory.TodoList
	for len(ch2) > 0 {
		last = <-ch2
	}
	if last == nil || last.Version != 100 {
		t.Fatalf("latest change lost: %+v", last)
	}
}

// embeddingServer answers the OpenAI embeddings API with vectors over a few
// concepts, so that words with the same meaning are near.
func embeddingServer(t *testing.T, fail *atomic.Bool) *httptest.Server {
	concepts := [][]string{
		{"car", "automobile", "vehicle", "sedan"},
		{"cat", "kitten", "feline"},
		{"database", "postgresql", "sqlite", "storage"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "test-embed" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			v := make([]float32, len(concepts)+1)
			v[len(concepts)] = 0.05
			for _, w := range memory.Terms(in) {
				for c, words := range concepts {
					for _, cw := range words {
						if w == cw {
							v[c]++
						}
					}
				}
			}
			data = append(data, item{"embedding", i, v})
		}
		// Answer out of order: clients must use index.
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSemanticRanking(t *testing.T) {
	var fail atomic.Bool
	srv := embeddingServer(t, &fail)
	emb := &memory.OpenAIEmbedder{URL: srv.URL + "/v1/embeddings", Model: "test-embed", APIKey: "k"}
	forEachWith(t, memory.Config{Embedder: emb}, func(t *testing.T, _ backend, _ string, s *memory.Store) {
		fail.Store(false)
		ctx := context.Background()
		car := put(t, s, alice, "my sedan is parked in the garage", "")
		cat := put(t, s, alice, "the kitten sleeps in the garage", "")
		db := put(t, s, alice, "memories are kept in sqlite", "")

		hs, info, err := s.Search(ctx, alice, "automobile", memory.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if info.Ranking != "fulltext+semantic" || len(hs) == 0 || hs[0].ID != car.ID || hs[0].Snippet == "" {
			t.Fatalf("automobile: %s %+v", info.Ranking, hs)
		}
		// Both rankings agree on the kitten for "kitten garage": first.
		hs, _, _ = s.Search(ctx, alice, "kitten garage", memory.Filter{}, 10)
		if len(hs) < 2 || hs[0].ID != cat.ID {
			t.Fatalf("kitten garage: %+v", hs)
		}
		// Semantic results respect scopes.
		if hs, _, _ := s.Search(ctx, carol, "automobile", memory.Filter{}, 10); len(hs) != 0 {
			t.Fatalf("carol sees %+v", hs)
		}
		// An update re-embeds.
		c := "the database is postgresql"
		if _, err := s.Update(ctx, alice, car.ID, &c, nil); err != nil {
			t.Fatal(err)
		}
		hs, _, _ = s.Search(ctx, alice, "storage", memory.Filter{}, 2)
		if !sameSet(ids(hs), []string{car.ID, db.ID}) {
			t.Fatalf("storage: %+v", hs)
		}
		// The endpoint failing degrades to full text, and says so.
		fail.Store(true)
		hs, info, err = s.Search(ctx, alice, "garage", memory.Filter{}, 10)
		if err != nil || info.Ranking != "fulltext" || info.Note == "" || len(hs) != 1 || hs[0].ID != cat.ID {
			t.Fatalf("failing endpoint: %v %+v %+v", err, info, hs)
		}
		put(t, s, alice, "stored while the endpoint is down", "")
	})
}

func TestTerms(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{`"a" OR b* NEAR(c)`, []string{"a", "or", "b", "near", "c"}},
		{"naïve café naïve", []string{"naïve", "café"}},
		{"-- ; ' \"", nil},
	}
	for _, tc := range cases {
		if got := memory.Terms(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func pgtestDatabase(b testing.TB) string { return pgtest.NewDatabase(b) }
