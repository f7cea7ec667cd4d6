package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toold/toold/pkg/memory/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

type backend struct {
	name string
	open func(t *testing.T, cfg Config) (*Store, func(cfg Config) *Store)
}

var backends = []backend{
	{"sqlite", func(t *testing.T, cfg Config) (*Store, func(Config) *Store) {
		path := filepath.Join(t.TempDir(), "state", "history.db")
		reopen := func(cfg Config) *Store {
			s, err := OpenSQLite(context.Background(), path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return reopen(cfg), reopen
	}},
	{"postgres", func(t *testing.T, cfg Config) (*Store, func(Config) *Store) {
		dsn := pgtest.NewDatabase(t)
		reopen := func(cfg Config) *Store {
			s, err := OpenPostgres(context.Background(), dsn, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return reopen(cfg), reopen
	}},
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func entry(i int, conv, name, tool, op, outcome string) Entry {
	e := Entry{Conversation: conv, CallID: fmt.Sprint(i), Name: name, Tool: tool, Operation: op,
		Arguments: `{"i":` + fmt.Sprint(i) + `}`, Decision: "allow", Outcome: outcome, Summary: "result " + fmt.Sprint(i),
		Started: t0.Add(time.Duration(i) * time.Minute), Ended: t0.Add(time.Duration(i)*time.Minute + 1500*time.Millisecond)}
	if outcome == "error" {
		e.Code = "EXECUTION_FAILED"
	}
	if name == "run_command" {
		code := i % 3
		e.ExitCode = &code
	}
	return e
}

func TestQuery(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s, reopen := b.open(t, Config{Now: func() time.Time { return t0.Add(time.Hour) }})
			for i := range 20 {
				conv := []string{"a", "b"}[i%2]
				var e Entry
				switch i % 4 {
				case 0:
					e = entry(i, conv, "read_file", "file_operations", "read_file", "success")
				case 1:
					e = entry(i, conv, "run_command", "terminal_operations", "run_command", "success")
				case 2:
					e = entry(i, conv, "write_file", "file_operations", "write_file", "error")
				case 3:
					e = entry(i, conv, "think", "think", "", "success")
				}
				if _, err := s.Record(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			s = reopen(Config{Now: func() time.Time { return t0.Add(time.Hour) }}) // survives a restart
			tests := []struct {
				name    string
				f       Filter
				wantIDs []string // call ids, newest first
				wantErr bool
			}{
				{name: "conversation", f: Filter{Conversation: "b", Limit: 3}, wantIDs: []string{"19", "17", "15"}},
				{name: "tool by flat name", f: Filter{Tool: "run_command", Limit: 2}, wantIDs: []string{"17", "13"}},
				{name: "tool by tool", f: Filter{Tool: "file_operations", Limit: 3}, wantIDs: []string{"18", "16", "14"}},
				{name: "tool.operation", f: Filter{Tool: "file_operations.write_file", Limit: 2}, wantIDs: []string{"18", "14"}},
				{name: "outcome", f: Filter{Outcome: "error", Conversation: "a", Limit: 2}, wantIDs: []string{"18", "14"}},
				{name: "time range", f: Filter{Since: t0.Add(3 * time.Minute), Until: t0.Add(6 * time.Minute)}, wantIDs: []string{"5", "4", "3"}},
				{name: "bad limit", f: Filter{Limit: 5000}, wantErr: true},
				{name: "bad outcome", f: Filter{Outcome: "meh"}, wantErr: true},
				{name: "bad range", f: Filter{Since: t0, Until: t0}, wantErr: true},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got, err := s.Query(ctx, tt.f)
					if tt.wantErr {
						if !errors.Is(err, ErrInvalid) {
							t.Fatalf("err = %v, want ErrInvalid", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					var ids []string
					for _, e := range got {
						ids = append(ids, e.CallID)
					}
					if strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
						t.Fatalf("got %v, want %v", ids, tt.wantIDs)
					}
				})
			}
			got, err := s.Query(ctx, Filter{Tool: "run_command", Limit: 1})
			if err != nil || len(got) != 1 {
				t.Fatal(err, got)
			}
			e := got[0]
			if e.ExitCode == nil || *e.ExitCode != 17%3 || e.Duration() != 1500*time.Millisecond || e.Summary != "result 17" || e.Arguments != `{"i":17}` || e.Decision != "allow" {
				t.Fatalf("entry %+v", e)
			}
			// Paging.
			page, err := s.Query(ctx, Filter{Conversation: "a", Limit: 2, BeforeID: got[0].ID})
			if err != nil || len(page) != 2 || page[0].ID >= got[0].ID {
				t.Fatal(err, page)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			now := t0.Add(10 * time.Minute)
			s, _ := b.open(t, Config{MaxEntries: 5, MaxAge: 5 * time.Minute, MaxArgBytes: 15, SummaryChars: 4, Now: func() time.Time { return now }})
			for i := range 10 {
				e := entry(i, "c", "think", "think", "", "success")
				e.Arguments = `{"thought":"` + strings.Repeat("é", 20) + `"}`
				e.Summary = "ünïcode summary"
				if _, err := s.Record(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Prune(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.Query(ctx, Filter{})
			if err != nil {
				t.Fatal(err)
			}
			// Entries 0..3 ended more than 5 minutes before "now" (t0+10m):
			// only 5..9 are left, and never more than 5.
			if len(got) != 5 || got[0].CallID != "9" || got[4].CallID != "5" {
				t.Fatalf("after pruning: %d entries, first %+v", len(got), got)
			}
			if got[0].Arguments != `{"thought":"é…` || got[0].Summary != "ünïc…" {
				t.Fatalf("cut: %q %q", got[0].Arguments, got[0].Summary)
			}
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	s, err := OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "h.db"), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := entry(1, "c", "read_file", "file_operations", "read_file", "success")
	for b.Loop() {
		if _, err := s.Record(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
}

// A Writer stores in the background what Record queued; Query sees every
// entry recorded before it; Close stores the rest.
func TestWriter(t *testing.T) {
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "h.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var failed []error
	w := NewWriter(s, 8, func(err error) { failed = append(failed, err) })
	now := time.Now()
	for i := range 100 {
		if _, err := w.Record(context.Background(), Entry{Conversation: "w", CallID: fmt.Sprint(i), Tool: "think", Outcome: "success", Started: now, Ended: now}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := w.Query(context.Background(), Filter{Conversation: "w", Limit: 1000})
	if err != nil || len(got) != 100 || got[0].CallID != "99" {
		t.Fatalf("query after 100 records: %d entries, %v", len(got), err)
	}
	if _, err := w.Record(context.Background(), Entry{Conversation: "w", CallID: "last", Started: now, Ended: now}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Record(context.Background(), Entry{}); err != ErrClosed {
		t.Fatalf("record after close: %v", err)
	}
	got, _ = s.Query(context.Background(), Filter{Conversation: "w", Limit: 1})
	if len(got) != 1 || got[0].CallID != "last" || len(failed) != 0 {
		t.Fatalf("after close: %v, failures %v", got, failed)
	}
}

// Concurrent Records (a queue of 16: they wait for room) and Queries:
// every Record that returned nil is stored, a Query sees at least what was
// recorded before it, and Close stores what is queued.
func TestWriterConcurrent(t *testing.T) {
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "h.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := NewWriter(s, 16, nil)
	now := time.Now()
	var wg sync.WaitGroup
	var stored atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if _, err := w.Record(context.Background(), Entry{Conversation: "c", CallID: fmt.Sprint(g, "-", i), Started: now, Ended: now}); err != nil {
					t.Error(err)
					return
				}
				stored.Add(1)
				if i%25 == 0 {
					before := stored.Load()
					got, err := w.Query(context.Background(), Filter{Conversation: "c", Limit: 1000})
					if err != nil || int64(len(got)) < min(before, 1000) {
						t.Errorf("query after %d records: %d entries, %v", before, len(got), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	got, err := w.Query(context.Background(), Filter{Conversation: "c", Limit: 1000})
	if err != nil || len(got) != 800 {
		t.Fatalf("after 800 records: %d entries, %v", len(got), err)
	}
	for i := range 16 {
		if _, err := w.Record(context.Background(), Entry{Conversation: "d", CallID: fmt.Sprint(i), Started: now, Ended: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Query(context.Background(), Filter{Conversation: "d", Limit: 1000})
	if len(got) != 16 {
		t.Fatalf("after close: %d of 16 entries", len(got))
	}
}

// BenchmarkRecordBatch is the Writer's work per entry: batches of 256 in
// one transaction each (ns/op, B/op and allocs/op are per entry).
func BenchmarkRecordBatch(b *testing.B) {
	s, err := OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "h.db"), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := make([]Entry, 256)
	for i := range batch {
		batch[i] = entry(i, "c", "read_file", "file_operations", "read_file", "success")
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%len(batch) == 0 {
			if err := s.RecordBatch(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
}

// TestCutChars checks cutChars against the conversion to runes it
// replaces, on valid and invalid UTF-8 around the cut.
func TestCutChars(t *testing.T) {
	byRunes := func(s string, n int) string {
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		return string([]rune(s)[:n]) + "…"
	}
	for _, s := range []string{"", "abc", "héllo wörld", "日本語のテキスト", "a\xffb\xfe", "\xff\xff\xff\xff", "ab\xe6\x97", strings.Repeat("line ✓\n", 600)} {
		for n := range 12 {
			if got, want := cutChars(s, n), byRunes(s, n); got != want {
				t.Errorf("cutChars(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
		if got, want := cutChars(s, 1000), byRunes(s, 1000); got != want {
			t.Errorf("cutChars(%q, 1000) = %q, want %q", s, got, want)
		}
	}
}

// RecordBatch stores what Record stores, for batches of every size around
// the rows of one INSERT (insertRows): each entry's every field, in order,
// with IDs increasing — on both backends.
func TestRecordBatchAsRecord(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := Config{MaxArgBytes: 12, SummaryChars: 7, Now: func() time.Time { return t0.Add(time.Hour) }}
			batched, _ := b.open(t, cfg)
			single, _ := b.open(t, cfg)
			n := 0
			for _, size := range []int{1, insertRows - 1, insertRows, insertRows + 1, 2*insertRows + 3} {
				var batch []Entry
				for range size {
					conv := fmt.Sprint("c", size)
					e := entry(n, conv, []string{"read_file", "run_command", "write_file"}[n%3], "file_operations", "read_file",
						[]string{"success", "error"}[n%2])
					e.Rule, e.Approver, e.Arguments = "rule-"+fmt.Sprint(n), "person", strings.Repeat("a", n%20)
					batch = append(batch, e)
					if _, err := single.Record(ctx, e); err != nil {
						t.Fatal(err)
					}
					n++
				}
				if err := batched.RecordBatch(ctx, batch); err != nil {
					t.Fatalf("a batch of %d: %v", size, err)
				}
			}
			got, err := batched.Query(ctx, Filter{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			want, err := single.Query(ctx, Filter{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n || len(want) != n {
				t.Fatalf("batched %d entries, single %d, want %d", len(got), len(want), n)
			}
			for i := range got {
				if i > 0 && got[i].ID >= got[i-1].ID {
					t.Fatalf("IDs not in the order stored (newest first): %d then %d", got[i-1].ID, got[i].ID)
				}
				g, w := got[i], want[i]
				g.ID, w.ID = 0, 0
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("entry %d:\nbatched %+v\nsingle  %+v", i, g, w)
				}
			}
		})
	}
}
