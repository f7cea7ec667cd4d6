// Package history keeps every tool call's record per conversation — name,
// arguments, decision, outcome, timing and a summary of the result — in
// toold's state store (SQLite under the state directory, or the PostgreSQL
// database memory uses), bounded by age and count, so that it survives a
// restart and can be queried by conversation, tool, outcome and time.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

// Entry is one call.
type Entry struct {
	// ID is assigned by Record, increasing.
	ID           int64
	Conversation string
	CallID       string
	// Name is the name the model used; Tool and Operation what it resolved
	// to.
	Name, Tool, Operation string
	// Arguments is the call's JSON arguments, cut at Config.MaxArgBytes.
	Arguments string
	// Decision is allow, ask or deny (empty when the call did not get that
	// far); Rule the policy rule that decided; Approver who approved.
	Decision, Rule, Approver string
	// Outcome is success or error; Code the error code.
	Outcome, Code string
	// ExitCode of a command, when there is one.
	ExitCode *int
	// Summary is the start of the result's content (Config.SummaryChars).
	Summary        string
	Started, Ended time.Time
}

// Duration is how long the call took.
func (e Entry) Duration() time.Duration { return e.Ended.Sub(e.Started) }

// Filter selects entries; zero fields select everything.
type Filter struct {
	Conversation string
	// Tool matches the name, the tool, or "tool.operation".
	Tool    string
	Outcome string
	// Since and Until bound the start time: Since <= Started < Until.
	Since, Until time.Time
	// Limit caps the entries returned (default 100, at most 1000), newest
	// first; BeforeID pages on (entries with a smaller ID).
	Limit    int
	BeforeID int64
}

// Config configures a Store.
type Config struct {
	// MaxAge drops entries older than this (default 30 days).
	MaxAge time.Duration
	// MaxEntries keeps at most this many entries, the newest (default
	// 100000; fewer where the database skipped ids, see prune).
	MaxEntries int
	// MaxArgBytes cuts stored arguments (default 4096).
	MaxArgBytes int
	// SummaryChars cuts the result summary (default 200).
	SummaryChars int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxAge <= 0 {
		c.MaxAge = 30 * 24 * time.Hour
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = 100000
	}
	if c.MaxArgBytes <= 0 {
		c.MaxArgBytes = 4096
	}
	if c.SummaryChars <= 0 {
		c.SummaryChars = 200
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ErrInvalid is returned for a bad filter.
var ErrInvalid = errors.New("invalid history query")

// Store is the history. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	pg      bool
	cfg     Config
	mu      sync.Mutex
	inserts int
}

// pruneEvery is how many Records pass between two prunes.
const pruneEvery = 256

// OpenSQLite opens (creating it and its directory, 0700/0600) the history
// database at path.
func OpenSQLite(ctx context.Context, path string, cfg Config) (*Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("history database path %q: ? and # are not allowed", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("history database: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	s := &Store{db: db, cfg: cfg.withDefaults()}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history database %s: %w", path, err)
	}
	_ = os.Chmod(path, 0o600)
	return s, s.prune(ctx)
}

// OpenPostgres opens the history in the PostgreSQL database dsn (tables
// toold_history*).
func OpenPostgres(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, errors.New("history: the postgres dsn does not parse")
	}
	s := &Store{db: db, pg: true, cfg: cfg.withDefaults()}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history: postgres: %w", err)
	}
	return s, s.prune(ctx)
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	id := "INTEGER PRIMARY KEY AUTOINCREMENT"
	if s.pg {
		id = "bigserial PRIMARY KEY"
	}
	// One version: create if missing. A later change adds a migration
	// list like pkg/memory's.
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS toold_history (
			id ` + id + `,
			conversation text NOT NULL,
			call_id text NOT NULL,
			name text NOT NULL,
			tool text NOT NULL,
			operation text NOT NULL,
			arguments text NOT NULL,
			decision text NOT NULL,
			rule text NOT NULL,
			approver text NOT NULL,
			outcome text NOT NULL,
			code text NOT NULL,
			exit_code integer,
			summary text NOT NULL,
			started_us bigint NOT NULL,
			ended_us bigint NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS toold_history_conv ON toold_history (conversation, id)`,
		`CREATE INDEX IF NOT EXISTS toold_history_started ON toold_history (started_us)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// q rewrites ? placeholders as $n for PostgreSQL.
func (s *Store) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Record stores e (arguments and summary cut to the configured bounds) and
// returns its ID. Every so often it drops entries beyond the bounds.
func (s *Store) Record(ctx context.Context, e Entry) (int64, error) {
	var id int64
	if err := s.db.QueryRowContext(ctx, s.q(insertEntry+" RETURNING id"), s.entryArgs(e)...).Scan(&id); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	return id, s.counted(ctx, 1)
}

const insertEntry = `INSERT INTO toold_history (conversation, call_id, name, tool, operation, arguments, decision, rule, approver, outcome, code, exit_code, summary, started_us, ended_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// entryArgs are the insert's arguments for e, cut to the configured bounds.
func (s *Store) entryArgs(e Entry) []any {
	var exit any
	if e.ExitCode != nil {
		exit = *e.ExitCode
	}
	return []any{e.Conversation, e.CallID, e.Name, e.Tool, e.Operation, cut(e.Arguments, s.cfg.MaxArgBytes),
		e.Decision, e.Rule, e.Approver, e.Outcome, e.Code, exit, cutChars(e.Summary, s.cfg.SummaryChars),
		e.Started.UnixMicro(), e.Ended.UnixMicro()}
}

// counted counts n inserts and prunes every pruneEvery of them.
func (s *Store) counted(ctx context.Context, n int) error {
	s.mu.Lock()
	before := s.inserts
	s.inserts += n
	due := s.inserts/pruneEvery != before/pruneEvery
	s.mu.Unlock()
	if due {
		return s.prune(ctx)
	}
	return nil
}

// prune drops entries older than MaxAge and beyond MaxEntries.
func (s *Store) prune(ctx context.Context) error {
	// Both deletes find their rows through an index, so a prune costs
	// what it removes, not the table's size: a full scan every pruneEvery
	// inserts was a fifth of toold's CPU at a few thousand calls a second
	// (bench/profiles-2026-11-27.md). An entry ends after it starts, so
	// "started_us < cutoff" selects no entry that "ended_us < cutoff" does
	// not, and lets the index on started_us narrow the scan.
	cutoff := s.cfg.Now().Add(-s.cfg.MaxAge).UnixMicro()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM toold_history WHERE started_us < ? AND ended_us < ?`), cutoff, cutoff); err != nil {
		return fmt.Errorf("history: prune: %w", err)
	}
	// Ids grow by one per entry (SQLite's AUTOINCREMENT, PostgreSQL's
	// bigserial), so the newest MaxEntries entries are those above the
	// largest id minus MaxEntries: found through the primary key, where an
	// OFFSET read MaxEntries rows on every prune. Where the database
	// skipped ids (a PostgreSQL sequence after a rolled-back insert),
	// fewer than MaxEntries stay.
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM toold_history WHERE id <= (SELECT MAX(id) FROM toold_history) - ?`), s.cfg.MaxEntries)
	if err != nil {
		return fmt.Errorf("history: prune: %w", err)
	}
	return nil
}

// Prune applies the bounds now (Record does every so often).
func (s *Store) Prune(ctx context.Context) error { return s.prune(ctx) }

// Query returns the entries f selects, newest first.
func (s *Store) Query(ctx context.Context, f Filter) ([]Entry, error) {
	switch {
	case f.Limit < 0 || f.Limit > 1000:
		return nil, fmt.Errorf("%w: limit %d: want 1 to 1000 (0: 100)", ErrInvalid, f.Limit)
	case !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until):
		return nil, fmt.Errorf("%w: since %s is not before until %s", ErrInvalid, f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	case f.Outcome != "" && f.Outcome != "success" && f.Outcome != "error":
		return nil, fmt.Errorf("%w: outcome %q: want success or error", ErrInvalid, f.Outcome)
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	var where []string
	var args []any
	add := func(cond string, a ...any) { where = append(where, cond); args = append(args, a...) }
	if f.Conversation != "" {
		add("conversation = ?", f.Conversation)
	}
	if f.Tool != "" {
		add("(name = ? OR tool = ? OR tool || '.' || operation = ?)", f.Tool, f.Tool, f.Tool)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
	}
	if !f.Since.IsZero() {
		add("started_us >= ?", f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		add("started_us < ?", f.Until.UnixMicro())
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	query := `SELECT id, conversation, call_id, name, tool, operation, arguments, decision, rule, approver, outcome, code, exit_code, summary, started_us, ended_us FROM toold_history`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var exit sql.NullInt64
		var st, en int64
		if err := rows.Scan(&e.ID, &e.Conversation, &e.CallID, &e.Name, &e.Tool, &e.Operation, &e.Arguments, &e.Decision, &e.Rule, &e.Approver,
			&e.Outcome, &e.Code, &exit, &e.Summary, &st, &en); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		if exit.Valid {
			v := int(exit.Int64)
			e.ExitCode = &v
		}
		e.Started, e.Ended = time.UnixMicro(st).UTC(), time.UnixMicro(en).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// cutChars shortens s to at most n runes. It walks the first n runes of
// s instead of converting all of it to runes (a 4 KB summary allocated
// 16 KB a row); a cut through invalid UTF-8 reads as that conversion made
// it (U+FFFD for each bad byte).
func cutChars(s string, n int) string {
	i := 0
	for range n {
		if i >= len(s) {
			return s
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	if !utf8.ValidString(s[:i]) {
		return string([]rune(s[:i])) + "…"
	}
	return s[:i] + "…"
}
