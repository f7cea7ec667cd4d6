package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/memory/pgtest"
	"github.com/toold/toold/pkg/testenv"
)

// Three toolds (three sidecars, each with its own workspace checkout and
// state directory) on one PostgreSQL, sharing the workspace id "team":
// a memory stored through one is found through the others; the history of
// one conversation that went through all three is queryable on any; a
// todo list changed through one is seen live by a WatchTodos on another —
// also after the watcher's LISTEN connection was killed (it reconnects);
// and each keeps its own audit chain, which verifies.
func TestThreeSidecarsOneDatabase(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	shared := func(c *config.Config) {
		c.Memory.Backend, c.Memory.DSN, c.Memory.WorkspaceID = "postgres", dsn, "team"
		c.History.Backend = "postgres"
	}
	var ds []*daemontest.Daemon
	var xs []*session
	for range 3 {
		d := daemontest.Start(t, daemontest.WithConfig(shared))
		x := newSession(t, d)
		hello(x, "shared")
		ds, xs = append(ds, d), append(xs, x)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Memory: stored through the first, found through the others.
	if res, _ := xs[0].call("m1", "store_memory", `{"content": "The staging database is rebuilt every Sunday night.", "tags": ["ops"]}`); !res.GetSuccess() {
		t.Fatalf("store: %v", res)
	}
	for i, x := range xs[1:] {
		res, _ := x.call(fmt.Sprint("s", i), "search_memory", `{"query": "when is staging rebuilt"}`)
		if !res.GetSuccess() || !strings.Contains(text(res), "Sunday night") {
			t.Fatalf("toold %d does not find the memory: %s", i+2, text(res))
		}
	}

	// Todos: a watch on the second sees the first's change live.
	mem := pb.NewMemoryServiceClient(ds[1].Conn)
	watch, err := mem.WatchTodos(ds[1].AsOperator(ctx), &pb.WatchTodosRequest{ConversationId: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.GetList().GetVersion() != 0 {
		t.Fatalf("initial list: %v %v", first, err)
	}
	waitVersion := func(v uint64, title string) {
		t.Helper()
		for {
			w, err := watch.Recv()
			if err != nil {
				t.Fatalf("watch ended waiting for version %d: %v", v, err)
			}
			l := w.GetList()
			if l.GetVersion() > v {
				t.Fatalf("version %d skipped: got %v", v, l)
			}
			if l.GetVersion() == v {
				if len(l.GetTodos()) == 0 || l.GetTodos()[0].GetTitle() != title {
					t.Fatalf("version %d: %v", v, l)
				}
				return
			}
		}
	}
	if res, _ := xs[0].call("t1", "manage_todos", `{"action": "write", "todos": [{"title": "Rotate the keys"}]}`); !res.GetSuccess() {
		t.Fatalf("todos: %v", res)
	}
	waitVersion(1, "Rotate the keys")

	// Kill the watcher's LISTEN connection; the change made through the
	// third toold still arrives (reconnect, then a resync or the
	// notification).
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	testenv.Poll(t, 30*time.Second, "the LISTEN connections to be terminated", func() bool {
		err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = 'LISTEN toold_todos' AND pid <> pg_backend_pid()`).Scan(&killed)
		return err == nil && killed > 0
	})
	if res, _ := xs[2].call("t2", "manage_todos", `{"action": "write", "todos": [{"title": "Rotate the keys again"}]}`); !res.GetSuccess() {
		t.Fatalf("todos: %v", res)
	}
	waitVersion(2, "Rotate the keys again")

	// History: the conversation went through all three; any toold shows
	// all of its calls.
	for i, d := range ds {
		hist := pb.NewHistoryServiceClient(d.Conn)
		testenv.Poll(t, 30*time.Second, "every call of the conversation in the history", func() bool {
			r, err := hist.Query(d.AsOperator(ctx), &pb.QueryHistoryRequest{ConversationId: "shared"})
			if err != nil {
				t.Fatalf("history on toold %d: %v", i+1, err)
			}
			ids := map[string]bool{}
			for _, e := range r.GetEntries() {
				ids[e.GetCallId()] = true
			}
			return ids["m1"] && ids["s0"] && ids["s1"] && ids["t1"] && ids["t2"]
		})
	}

	// Audit: one chain per toold, in its own state directory, each whole.
	dirs := map[string]bool{}
	for i, d := range ds {
		v, err := pb.NewAuditServiceClient(d.Conn).Verify(d.AsOperator(ctx), &pb.VerifyAuditRequest{})
		if err != nil || !v.GetOk() || v.GetRecords() == 0 {
			t.Fatalf("audit of toold %d: %v %v", i+1, v, err)
		}
		dirs[d.Main.Audit().Dir()] = true
	}
	if len(dirs) != 3 {
		t.Fatalf("the toolds share audit directories: %v", dirs)
	}
}
