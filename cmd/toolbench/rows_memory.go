package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/memory"
	"github.com/toold/toold/pkg/memory/pgtest"
)

// memWorkspace is the workspace_id of the memory rows, so that memories
// stored in-process are the ones toold searches.
const memWorkspace = "toolbench"

// Row 10: memory_operations. search_memory over 10,000 memories (the seed's
// SAM takes 20-100 ms) on SQLite and on PostgreSQL, and store_memory. The
// baselines, measured alternately in the same run: the same search (or
// store) through pkg/memory in-process on the same database — the storage's
// own cost — and a no-op call (think) on the same toold — the round trip.
// toold's results are checked to be the in-process search's, in order.
func (b *bench) rowMemoryOps(ctx context.Context, ws string) []*Row {
	n := 10_000
	if b.smoke {
		n = 300
	}
	var rows []*Row
	for _, backend := range []string{"sqlite", "postgres"} {
		search := &Row{ID: "memory-search-" + backend, Title: fmt.Sprintf("10. search_memory over %d memories, %s", n, backend), Kind: Latency,
			Target: "p50 ≤ 5 ms", check: func(r *Row) bool { return r.Toold.P50 <= 5 }}
		store := &Row{ID: "memory-store-" + backend, Title: "10. store_memory, " + backend, Kind: Latency}
		rows = append(rows, search, store)
		if err := b.memoryRows(ctx, ws, backend, n, search, store); err != nil {
			for _, r := range []*Row{search, store} {
				if r.Error == "" {
					r.Error = err.Error()
				}
			}
		}
	}
	return rows
}

var memWords = strings.Fields(`build test deploy cache flaky socket timeout retry database index query
migration schema rollback cluster node pod container image registry token rotate secretless config
flag option default override environment variable path workspace module package import vendor
release tag branch merge rebase commit review lint format vet race goroutine channel mutex context
cancel deadline stream chunk buffer queue backpressure latency throughput benchmark profile heap
allocation garbage compiler linker binary static dynamic library plugin extension protocol grpc
json yaml toml proto schema field enum oneof message service method handler middleware interceptor
logging tracing span metric exporter collector dashboard alert pager incident postmortem runbook`)

// commentParagraphs returns up to n paragraphs of // comments (15 to 80
// words) from the Go files under root, in walk order: English technical
// prose, as agents' notes are.
func commentParagraphs(root string, n int) ([]string, error) {
	var out []string
	var para []string
	flush := func() {
		if w := strings.Fields(strings.Join(para, " ")); len(w) >= 15 && len(w) <= 80 {
			out = append(out, strings.Join(w, " "))
		}
		para = para[:0]
	}
	errEnough := errors.New("enough")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(string(b), "\n") {
			t := strings.TrimSpace(line)
			if c, ok := strings.CutPrefix(t, "//"); ok && !strings.HasPrefix(c, "go:") {
				para = append(para, c)
				continue
			}
			flush()
			if len(out) >= n {
				return errEnough
			}
		}
		flush()
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	if len(out) < n {
		return nil, fmt.Errorf("only %d comment paragraphs under %s", len(out), root)
	}
	return out[:n], nil
}

// memText is a deterministic memory of a dozen words.
func memText(r *rand.Rand) string {
	w := make([]string, 12)
	for i := range w {
		w[i] = memWords[r.IntN(len(memWords))]
	}
	return "Remember: " + strings.Join(w, " ") + "."
}

func (b *bench) memoryRows(ctx context.Context, ws, backend string, n int, search, store *Row) error {
	var (
		be   memory.Backend
		err  error
		mcfg = map[string]any{"workspace_id": memWorkspace}
	)
	switch backend {
	case "sqlite":
		path := filepath.Join(b.tmp, "memory-bench.db")
		mcfg["path"] = path
		be, err = memory.OpenSQLite(ctx, path)
	case "postgres":
		var srv *pgtest.Server
		if srv, err = pgtest.Start(ctx); err != nil {
			return err
		}
		defer srv.Stop()
		var dsn string
		if dsn, err = srv.NewDatabase(ctx); err != nil {
			return err
		}
		mcfg["backend"], mcfg["dsn"] = "postgres", dsn
		be, err = memory.OpenPostgres(ctx, dsn)
	}
	if err != nil {
		return err
	}
	st := memory.New(memory.Config{Backend: be})
	defer st.Close()
	owner := memory.Owner{Workspace: memWorkspace, Conversation: "bench"}
	r := rand.New(rand.NewPCG(1, 2))
	paras, err := commentParagraphs(b.corpus, n)
	if err != nil {
		return err
	}
	stored := 0
	for i, p := range paras {
		if _, err := st.Put(ctx, owner, p, []string{memWords[i%len(memWords)]}, memory.ScopeWorkspace); err != nil {
			if errors.Is(err, errdefs.ErrDenied) {
				continue // a comment quoting a key: refused as a credential
			}
			return fmt.Errorf("populate: %w", err)
		}
		stored++
	}
	search.Title = fmt.Sprintf("10. search_memory over %d memories (Go doc comments), %s", stored, backend)
	cfg, err := b.writeConfig("memory-"+backend, map[string]any{"memory": mcfg})
	if err != nil {
		return err
	}
	d, err := b.startToold(ctx, ws, "--config", cfg)
	if err != nil {
		return err
	}
	defer d.stop()
	tc, err := openConv(ctx, d.client, &pb.Hello{OmitExecuting: true, ConversationId: "bench"})
	if err != nil {
		return err
	}
	defer tc.close()

	queries := []string{"context deadline exceeded", "buffer pool allocation", "goroutine leak", "file permission denied", "invalid utf8 decoding", "http request header"}
	// Verify: toold ranks exactly as the store does in-process.
	for _, q := range queries {
		res, err := tc.call("search_memory", fmt.Sprintf(`{"query": %q, "limit": 10}`, q))
		if err != nil {
			return err
		}
		if !res.GetSuccess() {
			return fmt.Errorf("search_memory: %v", res.GetError())
		}
		hits, _, err := st.Search(ctx, owner, q, memory.Filter{}, 10)
		if err != nil {
			return err
		}
		got := res.GetStructured().GetFields()["results"].GetListValue().GetValues()
		if len(got) != len(hits) || len(hits) == 0 {
			return fmt.Errorf("search %q: toold found %d, in-process %d", q, len(got), len(hits))
		}
		for i, h := range hits {
			if id := got[i].GetStructValue().GetFields()["id"].GetStringValue(); id != h.ID {
				return fmt.Errorf("search %q: result %d is %s, in-process %s", q, i, id, h.ID)
			}
		}
	}
	matched := 0
	for _, q := range queries {
		hs, _, _ := st.Search(ctx, owner, q, memory.Filter{}, stored)
		matched += len(hs)
	}
	search.Verified = fmt.Sprintf("%d queries: toold's top 10 = pkg/memory's in-process top 10, in order", len(queries))
	search.Note = fmt.Sprintf("a query matches %d of the %d memories on average", matched/len(queries), stored)

	qi := 0
	tooldSearch := timed(func() error {
		qi++
		res, err := tc.call("search_memory", fmt.Sprintf(`{"query": %q, "limit": 10}`, queries[qi%len(queries)]))
		if err == nil && !res.GetSuccess() {
			err = fmt.Errorf("search_memory: %v", res.GetError())
		}
		return err
	})
	pi := 0
	directSearch := timed(func() error {
		pi++
		_, _, err := st.Search(ctx, owner, queries[pi%len(queries)], memory.Filter{}, 10)
		return err
	})
	think := timed(func() error {
		res, err := tc.call("think", thinkArgs)
		if err == nil && !res.GetSuccess() {
			err = fmt.Errorf("think: %v", res.GetError())
		}
		return err
	})
	iters := b.iters(1000)
	ds, dd, err := rounds(iters, 20, tooldSearch, directSearch)
	if err != nil {
		return err
	}
	var dthink []time.Duration
	for range max(iters/2, 3) {
		d, err := think()
		if err != nil {
			return err
		}
		dthink = append(dthink, d)
	}
	search.Toold = latencies("toold", ds)
	search.Base = []Measure{latencies("pkg/memory in-process, same database (the storage's own cost)", dd), latencies("no-op call (think) on the same toold", dthink)}

	si := 0
	tooldStore := timed(func() error {
		si++
		res, err := tc.call("store_memory", fmt.Sprintf(`{"content": %q, "tags": ["bench"]}`, memText(r)+fmt.Sprint(si)))
		if err == nil && !res.GetSuccess() {
			err = fmt.Errorf("store_memory: %v", res.GetError())
		}
		return err
	})
	directStore := timed(func() error {
		_, err := st.Put(ctx, owner, memText(r), []string{"bench"}, memory.ScopeWorkspace)
		return err
	})
	dts, dds, err := rounds(iters, 20, tooldStore, directStore)
	if err != nil {
		return err
	}
	store.Toold = latencies("toold", dts)
	store.Base = []Measure{latencies("pkg/memory in-process, same database", dds), latencies("no-op call (think) on the same toold", dthink)}
	if _, total, err := st.List(ctx, owner, memory.Filter{Tags: []string{"bench"}}, 1, 0); err != nil || total < len(dts)+len(dds) {
		return fmt.Errorf("stores did not land: %d of %d (%v)", total, len(dts)+len(dds), err)
	}
	store.Verified = fmt.Sprintf("all %d stores found by list_memories afterwards", len(dts)+len(dds))
	return nil
}
