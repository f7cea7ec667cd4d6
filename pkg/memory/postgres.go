package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresMigrations are applied in order, each once, in one transaction
// under an advisory lock (so that toolds starting together against one
// database do not race); the version reached is kept in
// toold_schema_version. Never edit a migration that has shipped: append.
var postgresMigrations = []string{
	// 1: memories with a generated tsvector, per-scope usage, todo lists.
	`CREATE TABLE toold_memories (
		seq          bigserial PRIMARY KEY,
		id           text NOT NULL UNIQUE,
		scope        text NOT NULL,
		workspace    text NOT NULL,
		conversation text NOT NULL,
		content      text NOT NULL,
		tags         text[] NOT NULL,
		tag_text     text NOT NULL,
		created      timestamptz NOT NULL,
		updated      timestamptz NOT NULL,
		embedding    bytea,
		tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english', content || ' ' || tag_text)) STORED
	);
	CREATE INDEX toold_memories_owner ON toold_memories (scope, workspace, conversation, created);
	-- fastupdate off: new rows go into the index at once instead of a
	-- pending list that every search would scan linearly (and that makes
	-- the planner shun the index).
	CREATE INDEX toold_memories_tsv ON toold_memories USING gin (tsv) WITH (fastupdate = off);
	CREATE INDEX toold_memories_tags ON toold_memories USING gin (tags) WITH (fastupdate = off);
	CREATE TABLE toold_scope_usage (
		scope text NOT NULL, workspace text NOT NULL, conversation text NOT NULL,
		count bigint NOT NULL, bytes bigint NOT NULL,
		PRIMARY KEY (scope, workspace, conversation)
	);
	CREATE TABLE toold_todos (
		workspace    text NOT NULL,
		conversation text NOT NULL,
		items        jsonb NOT NULL,
		version      bigint NOT NULL,
		updated      timestamptz NOT NULL,
		PRIMARY KEY (workspace, conversation)
	);
	CREATE INDEX toold_todos_recent ON toold_todos (workspace, updated);`,
}

// migrationLock is the advisory lock key of migrations ("toold" in ASCII).
const migrationLock = 0x746f6f6c64

// Postgres is the Backend for agents on many machines sharing one memory.
// Its behaviour is SQLite's; ranking is PostgreSQL's full-text search
// (english configuration, ts_rank: term frequency, as bm25).
type Postgres struct {
	pool *pgxpool.Pool
}

var _ Backend = (*Postgres)(nil)

// OpenPostgres connects to the database dsn (a libpq URL or key=value
// string) and brings its schema up to date.
func OpenPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the DSN, password included.
		return nil, errors.New("memory: the postgres dsn does not parse")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("memory: postgres: %w", err)
	}
	p := &Postgres{pool: pool}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("memory: postgres: %w", err)
	}
	return p, nil
}

func (p *Postgres) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS toold_schema_version (version integer NOT NULL)`); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM toold_schema_version`).Scan(&v); err != nil {
			return err
		}
		if v > len(postgresMigrations) {
			return fmt.Errorf("schema version %d is newer than this toold knows (%d); use a newer toold", v, len(postgresMigrations))
		}
		for i := v; i < len(postgresMigrations); i++ {
			if _, err := tx.Exec(ctx, postgresMigrations[i]); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
		}
		if v < len(postgresMigrations) {
			if _, err := tx.Exec(ctx, `DELETE FROM toold_schema_version`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO toold_schema_version (version) VALUES ($1)`, len(postgresMigrations)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close implements Backend.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}

// pgArgs builds a positional argument list.
type pgArgs []any

func (a *pgArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

func pgVisible(o Owner, f Filter, a *pgArgs) string {
	var parts []string
	for _, sc := range f.scopes() {
		switch sc {
		case ScopeGlobal:
			parts = append(parts, `m.scope = 'global'`)
		case ScopeWorkspace:
			parts = append(parts, `(m.scope = 'workspace' AND m.workspace = `+a.add(o.Workspace)+`)`)
		case ScopeConversation:
			parts = append(parts, `(m.scope = 'conversation' AND m.workspace = `+a.add(o.Workspace)+` AND m.conversation = `+a.add(o.Conversation)+`)`)
		}
	}
	where := "(" + strings.Join(parts, " OR ") + ")"
	if len(f.Tags) > 0 {
		where += ` AND m.tags @> ` + a.add(f.Tags) + `::text[]`
	}
	return where
}

const pgCols = `m.id, m.content, m.tags, m.scope, m.workspace, m.conversation, m.created, m.updated`

func scanPG(sc interface{ Scan(...any) error }, m *Memory, extra ...any) error {
	var scope string
	if err := sc.Scan(append([]any{&m.ID, &m.Content, &m.Tags, &scope, &m.Workspace, &m.Conversation, &m.Created, &m.Updated}, extra...)...); err != nil {
		return err
	}
	m.Scope = Scope(scope)
	m.Created, m.Updated = m.Created.UTC(), m.Updated.UTC()
	if m.Tags == nil {
		m.Tags = []string{}
	}
	return nil
}

func pgUsage(ctx context.Context, tx pgx.Tx, m *Memory, dc int, db int64, lim Limits) error {
	var count int
	var bytes int64
	err := tx.QueryRow(ctx, `INSERT INTO toold_scope_usage AS u (scope, workspace, conversation, count, bytes) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (scope, workspace, conversation) DO UPDATE SET count = u.count + excluded.count, bytes = u.bytes + excluded.bytes
		RETURNING count, bytes`, string(m.Scope), m.Workspace, m.Conversation, dc, db).Scan(&count, &bytes)
	if err != nil {
		return err
	}
	if (dc > 0 && count > lim.ScopeMemories) || (db > 0 && bytes > lim.ScopeBytes) {
		return scopeFull(m.Scope, count-dc, bytes-db, lim)
	}
	return nil
}

func nonNil(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

// Insert implements Backend.
func (p *Postgres) Insert(ctx context.Context, m *Memory, vec []float32, lim Limits) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if err := pgUsage(ctx, tx, m, 1, int64(len(m.Content)), lim); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO toold_memories (id, scope, workspace, conversation, content, tags, tag_text, created, updated, embedding)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			m.ID, string(m.Scope), m.Workspace, m.Conversation, m.Content, nonNil(m.Tags), strings.Join(m.Tags, " "),
			m.Created, m.Updated, encodeVector(vec))
		return err
	})
}

func (p *Postgres) lockVisible(ctx context.Context, tx pgx.Tx, o Owner, id string) (*Memory, error) {
	a := pgArgs{id}
	where := pgVisible(o, Filter{}, &a)
	var m Memory
	err := scanPG(tx.QueryRow(ctx, `SELECT `+pgCols+` FROM toold_memories m WHERE m.id = $1 AND `+where+` FOR UPDATE`, a...), &m)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return &m, err
}

// Update implements Backend.
func (p *Postgres) Update(ctx context.Context, o Owner, id string, content *string, tags []string, vec []float32, now time.Time, lim Limits) (*Memory, error) {
	var out *Memory
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		m, err := p.lockVisible(ctx, tx, o, id)
		if err != nil {
			return err
		}
		var set []string
		var a pgArgs
		if content != nil {
			if err := pgUsage(ctx, tx, m, 0, int64(len(*content)-len(m.Content)), lim); err != nil {
				return err
			}
			m.Content = *content
			set = append(set, "content = "+a.add(m.Content), "embedding = "+a.add(encodeVector(vec)))
		}
		if tags != nil {
			m.Tags = tags
			set = append(set, "tags = "+a.add(nonNil(tags)), "tag_text = "+a.add(strings.Join(tags, " ")))
		}
		m.Updated = now
		set = append(set, "updated = "+a.add(now))
		if _, err := tx.Exec(ctx, `UPDATE toold_memories SET `+strings.Join(set, ", ")+` WHERE id = `+a.add(m.ID), a...); err != nil {
			return err
		}
		out = m
		return nil
	})
	return out, err
}

// Delete implements Backend.
func (p *Postgres) Delete(ctx context.Context, o Owner, id string) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		m, err := p.lockVisible(ctx, tx, o, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM toold_memories WHERE id = $1`, id); err != nil {
			return err
		}
		return pgUsage(ctx, tx, m, -1, -int64(len(m.Content)), lim0)
	})
}

func collectPG(rows pgx.Rows, extra func(*Hit) []any) ([]Hit, error) {
	defer rows.Close()
	var out []Hit
	for rows.Next() {
		var h Hit
		var ex []any
		if extra != nil {
			ex = extra(&h)
		}
		if err := scanPG(rows, &h.Memory, ex...); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

func memoriesOf(hs []Hit) []Memory {
	out := make([]Memory, len(hs))
	for i := range hs {
		out[i] = hs[i].Memory
	}
	return out
}

// Get implements Backend.
func (p *Postgres) Get(ctx context.Context, o Owner, ids []string) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	a := pgArgs{ids}
	where := pgVisible(o, Filter{}, &a)
	rows, err := p.pool.Query(ctx, `SELECT `+pgCols+` FROM toold_memories m WHERE m.id = ANY($1) AND `+where, a...)
	if err != nil {
		return nil, err
	}
	hs, err := collectPG(rows, nil)
	return memoriesOf(hs), err
}

// List implements Backend.
func (p *Postgres) List(ctx context.Context, o Owner, f Filter, limit, offset int) ([]Memory, int, error) {
	var a pgArgs
	where := pgVisible(o, f, &a)
	var total int
	if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM toold_memories m WHERE `+where, a...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgCols+` FROM toold_memories m WHERE `+where+` ORDER BY m.created DESC, m.seq DESC LIMIT `+a.add(limit)+` OFFSET `+a.add(offset), a...)
	if err != nil {
		return nil, 0, err
	}
	hs, err := collectPG(rows, nil)
	return memoriesOf(hs), total, err
}

// Search implements Backend: the english text-search configuration (which
// stems like SQLite's porter tokenizer), ranked by ts_rank (about half the cost of ts_rank_cd per match); snippets by
// ts_headline, computed only for the rows returned.
func (p *Postgres) Search(ctx context.Context, o Owner, f Filter, terms []string, limit int) ([]Hit, error) {
	a := pgArgs{strings.Join(terms, " | ")} // Terms holds letters and digits only
	where := pgVisible(o, f, &a)
	// The tsquery is an expression of the WHERE clause, not a FROM item,
	// so that the planner can use the GIN index (as a join with a function
	// scan it scans every row).
	rows, err := p.pool.Query(ctx, `SELECT `+pgCols+`,
			ts_headline('english', m.content, to_tsquery('english', $1), 'StartSel=**, StopSel=**, MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "'),
			best.rank
		FROM (
			SELECT m.seq, ts_rank(m.tsv, to_tsquery('english', $1)) AS rank
			FROM toold_memories m
			WHERE m.tsv @@ to_tsquery('english', $1) AND `+where+`
			ORDER BY rank DESC, m.seq DESC
			LIMIT `+a.add(limit)+`
		) best JOIN toold_memories m ON m.seq = best.seq
		ORDER BY best.rank DESC, m.seq DESC`, a...)
	if err != nil {
		return nil, err
	}
	return collectPG(rows, func(h *Hit) []any { return []any{&h.Snippet, &h.Score} })
}

// Vectors implements Backend.
func (p *Postgres) Vectors(ctx context.Context, o Owner, f Filter, fn func(string, []float32)) error {
	var a pgArgs
	where := pgVisible(o, f, &a)
	rows, err := p.pool.Query(ctx, `SELECT m.id, m.embedding FROM toold_memories m WHERE m.embedding IS NOT NULL AND `+where, a...)
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

func scanPGTodos(sc interface{ Scan(...any) error }, l *TodoList) error {
	var v int64
	if err := sc.Scan(&l.Conversation, &l.Todos, &v, &l.Updated); err != nil {
		return err
	}
	l.Version = uint64(v)
	l.Updated = l.Updated.UTC()
	if l.Todos == nil {
		l.Todos = []Todo{}
	}
	return nil
}

// Todos implements Backend.
func (p *Postgres) Todos(ctx context.Context, workspace, conversation string) (*TodoList, error) {
	l := &TodoList{Workspace: workspace, Conversation: conversation, Todos: []Todo{}}
	err := scanPGTodos(p.pool.QueryRow(ctx, `SELECT conversation, items, version, updated FROM toold_todos WHERE workspace = $1 AND conversation = $2`, workspace, conversation), l)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, nil
	}
	return l, err
}

// SaveTodos implements Backend.
func (p *Postgres) SaveTodos(ctx context.Context, workspace, conversation string, change func(*TodoList) (*TodoList, error)) (*TodoList, error) {
	var out *TodoList
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		// Make the row exist so that FOR UPDATE serializes concurrent
		// writers of the same list.
		if _, err := tx.Exec(ctx, `INSERT INTO toold_todos (workspace, conversation, items, version, updated) VALUES ($1, $2, '[]', 0, now())
			ON CONFLICT DO NOTHING`, workspace, conversation); err != nil {
			return err
		}
		l := &TodoList{Workspace: workspace, Conversation: conversation}
		if err := scanPGTodos(tx.QueryRow(ctx, `SELECT conversation, items, version, updated FROM toold_todos WHERE workspace = $1 AND conversation = $2 FOR UPDATE`, workspace, conversation), l); err != nil {
			return err
		}
		l, err := change(l)
		if err != nil {
			return err
		}
		l.Version++
		if l.Todos == nil {
			l.Todos = []Todo{}
		}
		if _, err := tx.Exec(ctx, `UPDATE toold_todos SET items = $3, version = $4, updated = $5 WHERE workspace = $1 AND conversation = $2`,
			workspace, conversation, l.Todos, int64(l.Version), l.Updated); err != nil {
			return err
		}
		// Tell the other toolds on the database (delivered at commit).
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, todoChannel, todoPayload(workspace, conversation, l.Version)); err != nil {
			return err
		}
		out = l
		return nil
	})
	return out, err
}

// todoChannel is the LISTEN/NOTIFY channel of todo changes.
const todoChannel = "toold_todos"

// todoPayload is a notification's payload: the list's key and version as
// JSON, or "" (read everything again) when that would pass PostgreSQL's
// 8000-byte limit.
func todoPayload(workspace, conversation string, version uint64) string {
	b, _ := json.Marshal(struct {
		W string `json:"w"`
		C string `json:"c"`
		V uint64 `json:"v"`
	}{workspace, conversation, version})
	if len(b) >= 7900 {
		return ""
	}
	return string(b)
}

// pgReconnect bounds the wait between attempts to listen again.
const pgReconnect = 5 * time.Second

// ListenTodos implements Backend with LISTEN on its own connection (taken
// out of the pool), reconnecting after a pause when it is lost. Each time
// LISTEN is in force — the first time too — changed gets a Resync: a change
// another toold saved before it (while the watch that started the listener
// was being set up, or while the connection was down) sent its NOTIFY to
// nobody.
func (p *Postgres) ListenTodos(ctx context.Context, changed func(TodoChange)) error {
	pause := 100 * time.Millisecond
	for {
		err := p.listenOnce(ctx, changed)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil { // a session that worked: start the pauses over
			pause = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, pgReconnect)
	}
}

// listenOnce listens on one connection until it fails; it returns nil
// when it had listened (the failure came later).
func (p *Postgres) listenOnce(ctx context.Context, changed func(TodoChange)) error {
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := c.Hijack() // LISTEN state must not go back to the pool
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+todoChannel); err != nil {
		return err
	}
	changed(TodoChange{Resync: true})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return nil
		}
		var v struct {
			W string `json:"w"`
			C string `json:"c"`
			V uint64 `json:"v"`
		}
		if n.Payload == "" || json.Unmarshal([]byte(n.Payload), &v) != nil {
			changed(TodoChange{Resync: true})
			continue
		}
		changed(TodoChange{Workspace: v.W, Conversation: v.C, Version: v.V})
	}
}

// TodoLists implements Backend.
func (p *Postgres) TodoLists(ctx context.Context, workspace string, limit int) ([]*TodoList, error) {
	rows, err := p.pool.Query(ctx, `SELECT conversation, items, version, updated FROM toold_todos WHERE workspace = $1 AND version > 0 ORDER BY updated DESC, conversation LIMIT $2`, workspace, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*TodoList
	for rows.Next() {
		l := &TodoList{Workspace: workspace}
		if err := scanPGTodos(rows, l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
