package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver "sqlite"
)

// sqliteMigrations are applied in order, each once, in a transaction; the
// version reached is kept in schema_version. Never edit a migration that
// has shipped: append a new one.
var sqliteMigrations = []string{
	// 1: memories, their full-text index, per-scope usage, todo lists.
	`CREATE TABLE memories (
		seq          INTEGER PRIMARY KEY,
		id           TEXT NOT NULL UNIQUE,
		scope        TEXT NOT NULL,
		workspace    TEXT NOT NULL,
		conversation TEXT NOT NULL,
		content      TEXT NOT NULL,
		tags         TEXT NOT NULL,   -- JSON array of strings
		tag_text     TEXT NOT NULL,   -- the tags, space-separated, for the index
		created      INTEGER NOT NULL, -- unix microseconds
		updated      INTEGER NOT NULL,
		embedding    BLOB
	);
	CREATE INDEX memories_owner ON memories (scope, workspace, conversation, created);
	CREATE VIRTUAL TABLE memories_fts USING fts5 (
		content, tag_text, content='memories', content_rowid='seq', tokenize='porter unicode61'
	);
	CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
		INSERT INTO memories_fts (rowid, content, tag_text) VALUES (new.seq, new.content, new.tag_text);
	END;
	CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
		INSERT INTO memories_fts (memories_fts, rowid, content, tag_text) VALUES ('delete', old.seq, old.content, old.tag_text);
	END;
	CREATE TRIGGER memories_au AFTER UPDATE OF content, tag_text ON memories BEGIN
		INSERT INTO memories_fts (memories_fts, rowid, content, tag_text) VALUES ('delete', old.seq, old.content, old.tag_text);
		INSERT INTO memories_fts (rowid, content, tag_text) VALUES (new.seq, new.content, new.tag_text);
	END;
	CREATE TABLE scope_usage (
		scope TEXT NOT NULL, workspace TEXT NOT NULL, conversation TEXT NOT NULL,
		count INTEGER NOT NULL, bytes INTEGER NOT NULL,
		PRIMARY KEY (scope, workspace, conversation)
	);
	CREATE TABLE todos (
		workspace TEXT NOT NULL, conversation TEXT NOT NULL,
		items     TEXT NOT NULL,   -- JSON array of todos
		version   INTEGER NOT NULL,
		updated   INTEGER NOT NULL,
		PRIMARY KEY (workspace, conversation)
	);
	CREATE INDEX todos_recent ON todos (workspace, updated);`,
}

// SQLite is the embedded Backend: one database file in WAL mode. Readers
// never wait for the writer; writers take the database's write lock at the
// start of their transaction and wait for one another up to the busy
// timeout.
type SQLite struct {
	db *sql.DB
}

var _ Backend = (*SQLite)(nil)

// OpenSQLite opens (creating it and its directory, mode 0700, if needed)
// the database at path and brings its schema up to date.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("memory database path %q: ? and # are not allowed", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("memory database: %w", err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("memory database %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &SQLite{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("memory database %s: %w", path, err)
	}
	// The file holds what agents remember: only toold's user may read it.
	_ = os.Chmod(path, 0o600)
	return s, nil
}

func (s *SQLite) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return err
	}
	if v > len(sqliteMigrations) {
		return fmt.Errorf("schema version %d is newer than this toold knows (%d); use a newer toold", v, len(sqliteMigrations))
	}
	for i := v; i < len(sqliteMigrations); i++ {
		if _, err := tx.ExecContext(ctx, sqliteMigrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if v < len(sqliteMigrations) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, len(sqliteMigrations)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close implements Backend.
func (s *SQLite) Close() error { return s.db.Close() }

// sqliteVisible is the predicate of the memories o sees (alias m), with its
// arguments.
func sqliteVisible(o Owner, f Filter) (string, []any) {
	var parts []string
	var args []any
	for _, sc := range f.scopes() {
		switch sc {
		case ScopeGlobal:
			parts = append(parts, `m.scope = 'global'`)
		case ScopeWorkspace:
			parts = append(parts, `(m.scope = 'workspace' AND m.workspace = ?)`)
			args = append(args, o.Workspace)
		case ScopeConversation:
			parts = append(parts, `(m.scope = 'conversation' AND m.workspace = ? AND m.conversation = ?)`)
			args = append(args, o.Workspace, o.Conversation)
		}
	}
	where := "(" + strings.Join(parts, " OR ") + ")"
	for _, t := range f.Tags {
		where += ` AND EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)`
		args = append(args, t)
	}
	return where, args
}

const sqliteCols = `m.id, m.content, m.tags, m.scope, m.workspace, m.conversation, m.created, m.updated`

func scanSQLite(sc interface{ Scan(...any) error }, m *Memory, extra ...any) error {
	var tags string
	var created, updated int64
	if err := sc.Scan(append([]any{&m.ID, &m.Content, &tags, &m.Scope, &m.Workspace, &m.Conversation, &created, &updated}, extra...)...); err != nil {
		return err
	}
	m.Created, m.Updated = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return json.Unmarshal([]byte(tags), &m.Tags)
}

func tagsJSON(tags []string) string {
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

// usageDelta changes a scope's usage by (dc, db) inside tx and fails with
// the scope-full error when the result exceeds lim (only when growing).
func sqliteUsage(ctx context.Context, tx *sql.Tx, m *Memory, dc int, db int64, lim Limits) error {
	var count int
	var bytes int64
	err := tx.QueryRowContext(ctx, `INSERT INTO scope_usage (scope, workspace, conversation, count, bytes) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (scope, workspace, conversation) DO UPDATE SET count = scope_usage.count + excluded.count, bytes = scope_usage.bytes + excluded.bytes
		RETURNING count, bytes`, m.Scope, m.Workspace, m.Conversation, dc, db).Scan(&count, &bytes)
	if err != nil {
		return err
	}
	if (dc > 0 && count > lim.ScopeMemories) || (db > 0 && bytes > lim.ScopeBytes) {
		return scopeFull(m.Scope, count-dc, bytes-db, lim)
	}
	return nil
}

// Insert implements Backend.
func (s *SQLite) Insert(ctx context.Context, m *Memory, vec []float32, lim Limits) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := sqliteUsage(ctx, tx, m, 1, int64(len(m.Content)), lim); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO memories (id, scope, workspace, conversation, content, tags, tag_text, created, updated, embedding)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Scope, m.Workspace, m.Conversation, m.Content, tagsJSON(m.Tags), strings.Join(m.Tags, " "),
		m.Created.UnixMicro(), m.Updated.UnixMicro(), encodeVector(vec))
	if err != nil {
		return err
	}
	return tx.Commit()
}

// Update implements Backend.
func (s *SQLite) Update(ctx context.Context, o Owner, id string, content *string, tags []string, vec []float32, now time.Time, lim Limits) (*Memory, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	where, args := sqliteVisible(o, Filter{})
	var m Memory
	err = scanSQLite(tx.QueryRowContext(ctx, `SELECT `+sqliteCols+` FROM memories m WHERE m.id = ? AND `+where, append([]any{id}, args...)...), &m)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	var set []string
	var sargs []any
	if content != nil {
		if err := sqliteUsage(ctx, tx, &m, 0, int64(len(*content)-len(m.Content)), lim); err != nil {
			return nil, err
		}
		m.Content = *content
		set = append(set, "content = ?", "embedding = ?")
		sargs = append(sargs, m.Content, encodeVector(vec))
	}
	if tags != nil {
		m.Tags = tags
		set = append(set, "tags = ?", "tag_text = ?")
		sargs = append(sargs, tagsJSON(tags), strings.Join(tags, " "))
	}
	m.Updated = now
	set = append(set, "updated = ?")
	sargs = append(sargs, now.UnixMicro(), m.ID)
	if _, err := tx.ExecContext(ctx, `UPDATE memories SET `+strings.Join(set, ", ")+` WHERE id = ?`, sargs...); err != nil {
		return nil, err
	}
	return &m, tx.Commit()
}

// Delete implements Backend.
func (s *SQLite) Delete(ctx context.Context, o Owner, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	where, args := sqliteVisible(o, Filter{})
	var m Memory
	err = scanSQLite(tx.QueryRowContext(ctx, `SELECT `+sqliteCols+` FROM memories m WHERE m.id = ? AND `+where, append([]any{id}, args...)...), &m)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE id = ?`, id); err != nil {
		return err
	}
	if err := sqliteUsage(ctx, tx, &m, -1, -int64(len(m.Content)), lim0); err != nil {
		return err
	}
	return tx.Commit()
}

// lim0 is used where usage only shrinks.
var lim0 = DefaultLimits

// Get implements Backend.
func (s *SQLite) Get(ctx context.Context, o Owner, ids []string) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	where, args := sqliteVisible(o, Filter{})
	idsJSON, _ := json.Marshal(ids)
	rows, err := s.db.QueryContext(ctx, `SELECT `+sqliteCols+` FROM memories m WHERE m.id IN (SELECT value FROM json_each(?)) AND `+where,
		append([]any{string(idsJSON)}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		var m Memory
		if err := scanSQLite(rows, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// List implements Backend.
func (s *SQLite) List(ctx context.Context, o Owner, f Filter, limit, offset int) ([]Memory, int, error) {
	where, args := sqliteVisible(o, f)
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memories m WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+sqliteCols+` FROM memories m WHERE `+where+` ORDER BY m.created DESC, m.seq DESC LIMIT ? OFFSET ?`,
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		var m Memory
		if err := scanSQLite(rows, &m); err != nil {
			return nil, 0, err
		}
		out = append(out, m)
	}
	return out, total, rows.Err()
}

// Search implements Backend: FTS5 with the porter stemmer, ranked by bm25.
// It ranks in two steps: the ids of the best matches first (bm25 of every
// match, nothing else), then rows and snippets for those only — computing
// a snippet costs more than ranking, and SQLite would compute it for every
// match before sorting.
func (s *SQLite) Search(ctx context.Context, o Owner, f Filter, terms []string, limit int) ([]Hit, error) {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + t + `"` // Terms holds letters and digits only
	}
	match := strings.Join(q, " OR ")
	where, args := sqliteVisible(o, f)
	rows, err := s.db.QueryContext(ctx, `SELECT memories_fts.rowid, bm25(memories_fts) AS rank
		FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ? AND `+where+` ORDER BY rank, m.seq DESC LIMIT ?`,
		append(append([]any{match}, args...), limit)...)
	if err != nil {
		return nil, err
	}
	var seqs []int64
	score := map[int64]float64{}
	for rows.Next() {
		var seq int64
		var r float64
		if err := rows.Scan(&seq, &r); err != nil {
			rows.Close()
			return nil, err
		}
		seqs = append(seqs, seq)
		score[seq] = -r // bm25 is lower for better matches
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(seqs) == 0 {
		return nil, err
	}
	seqJSON, _ := json.Marshal(seqs)
	rows, err = s.db.QueryContext(ctx, `SELECT `+sqliteCols+`, m.seq, snippet(memories_fts, 0, '**', '**', '…', 24)
		FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ? AND memories_fts.rowid IN (SELECT value FROM json_each(?))`, match, string(seqJSON))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byseq := map[int64]Hit{}
	for rows.Next() {
		var h Hit
		var seq int64
		if err := scanSQLite(rows, &h.Memory, &seq, &h.Snippet); err != nil {
			return nil, err
		}
		h.Score = score[seq]
		byseq[seq] = h
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(seqs))
	for _, seq := range seqs {
		if h, ok := byseq[seq]; ok { // gone between the two steps: left out
			out = append(out, h)
		}
	}
	return out, nil
}

// Vectors implements Backend.
func (s *SQLite) Vectors(ctx context.Context, o Owner, f Filter, fn func(string, []float32)) error {
	where, args := sqliteVisible(o, f)
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, m.embedding FROM memories m WHERE m.embedding IS NOT NULL AND `+where, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return err
		}
		fn(id, decodeVector(b))
	}
	return rows.Err()
}

func scanTodos(sc interface{ Scan(...any) error }, l *TodoList) error {
	var items string
	var updated int64
	if err := sc.Scan(&l.Conversation, &items, &l.Version, &updated); err != nil {
		return err
	}
	l.Updated = time.UnixMicro(updated).UTC()
	return json.Unmarshal([]byte(items), &l.Todos)
}

func todosJSON(t []Todo) string {
	if t == nil {
		t = []Todo{}
	}
	b, _ := json.Marshal(t)
	return string(b)
}

// Todos implements Backend.
func (s *SQLite) Todos(ctx context.Context, workspace, conversation string) (*TodoList, error) {
	l := &TodoList{Workspace: workspace, Conversation: conversation, Todos: []Todo{}}
	err := scanTodos(s.db.QueryRowContext(ctx, `SELECT conversation, items, version, updated FROM todos WHERE workspace = ? AND conversation = ?`, workspace, conversation), l)
	if errors.Is(err, sql.ErrNoRows) {
		return l, nil
	}
	return l, err
}

// SaveTodos implements Backend.
func (s *SQLite) SaveTodos(ctx context.Context, workspace, conversation string, change func(*TodoList) (*TodoList, error)) (*TodoList, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	l := &TodoList{Workspace: workspace, Conversation: conversation, Todos: []Todo{}}
	err = scanTodos(tx.QueryRowContext(ctx, `SELECT conversation, items, version, updated FROM todos WHERE workspace = ? AND conversation = ?`, workspace, conversation), l)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if l, err = change(l); err != nil {
		return nil, err
	}
	l.Version++
	if _, err := tx.ExecContext(ctx, `INSERT INTO todos (workspace, conversation, items, version, updated) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (workspace, conversation) DO UPDATE SET items = excluded.items, version = excluded.version, updated = excluded.updated`,
		workspace, conversation, todosJSON(l.Todos), l.Version, l.Updated.UnixMicro()); err != nil {
		return nil, err
	}
	return l, tx.Commit()
}

// TodoLists implements Backend.
func (s *SQLite) TodoLists(ctx context.Context, workspace string, limit int) ([]*TodoList, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT conversation, items, version, updated FROM todos WHERE workspace = ? ORDER BY updated DESC, conversation LIMIT ?`, workspace, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*TodoList
	for rows.Next() {
		l := &TodoList{Workspace: workspace}
		if err := scanTodos(rows, l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// ListenTodos implements Backend: a SQLite database is one toold's, whose
// Store publishes its own changes, so there is nothing to listen to.
func (s *SQLite) ListenTodos(ctx context.Context, changed func(TodoChange)) error { return nil }
