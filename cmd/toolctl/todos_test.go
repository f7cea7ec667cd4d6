package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// waitFor polls until cond holds on the buffer's text, or fails.
func waitFor(t *testing.T, buf *testenv.Buffer, what string, cond func(string) bool) {
	t.Helper()
	if !testenv.Until(20*time.Second, func() bool { return cond(buf.String()) }) {
		t.Fatalf("timed out waiting for %s; output:\n%s", what, buf.String())
	}
}

func TestTodos(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t)

	r := runAsOperator(t, d, "todos")
	r.check(t, exitOK, nil, []string{"no todo lists"})

	// A watcher in another process's stead, while an agent plans.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testenv.Buffer
	a := &app{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		getenv:        func(k string) string { return map[string]string{"TOOLD_STATE_DIR": d.Main.Config.StateDir}[k] },
		isTerminal:    func(io.Writer) bool { return false },
		terminalWidth: func(io.Writer) int { return 0 },
	}
	done := make(chan int, 1)
	go func() {
		done <- a.run(ctx, []string{"--socket", d.Socket, "todos", "--conversation", "dev-1", "--watch"})
	}()
	waitFor(t, &out, "the empty list", func(s string) bool { return strings.Contains(s, "dev-1 · 0/0 done · v0\n  (empty)") })

	r = runAt(t, d.Socket, "call", "--conversation", "dev-1", "manage_todos", "action=write",
		`todos:=[{"title":"Read the code","status":"completed"},{"title":"Write tests","status":"in_progress","note":"table tests"},{"title":"Ship"}]`)
	r.check(t, exitOK, []string{"[~] 2. Write tests"}, []string{"Starting: Write tests"})
	waitFor(t, &out, "the written list", func(s string) bool {
		return strings.Contains(s, "dev-1 · 1/3 done · v1") &&
			strings.Contains(s, "  [x] 1. Read the code\n  [~] 2. Write tests — table tests\n  [ ] 3. Ship\n")
	})
	runAt(t, d.Socket, "call", "--conversation", "dev-1", "manage_todos", "action=update", `todos:=[{"id":"2","status":"completed"}]`).check(t, exitOK, nil, nil)
	waitFor(t, &out, "the update", func(s string) bool { return strings.Contains(s, "dev-1 · 2/3 done · v2") })
	// Another conversation's change does not reach this watch.
	runAt(t, d.Socket, "call", "--conversation", "other", "manage_todos", "action=write", `todos:=[{"title":"x"}]`).check(t, exitOK, nil, nil)

	r = runAsOperator(t, d, "todos")
	r.check(t, exitOK, []string{"other · 0/1 done · v1", "dev-1 · 2/3 done · v2"}, nil)
	if strings.Index(r.stdout, "other") > strings.Index(r.stdout, "dev-1") {
		t.Errorf("not most recent first:\n%s", r.stdout)
	}
	r = runAsOperator(t, d, "todos", "--conversation", "dev-1", "--json")
	r.check(t, exitOK, nil, nil)
	resp := &pb.GetTodosResponse{}
	if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil || len(resp.GetLists()) != 1 || resp.GetLists()[0].GetTodos()[1].GetStatus() != pb.TodoStatus_TODO_STATUS_COMPLETED {
		t.Fatalf("json: %v %s", err, r.stdout)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("watch exited %d: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not end on cancel")
	}
	if strings.Contains(out.String(), "other") {
		t.Fatalf("the watch of dev-1 showed another conversation:\n%s", out.String())
	}
}

func TestTodosWithoutMemory(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Memory.Backend = "off" }))
	runAsOperator(t, d, "todos").check(t, exitFailure, nil, []string{"memory is unavailable", "turned off"})
	runAsOperator(t, d, "todos", "--watch").check(t, exitFailure, nil, []string{"memory is unavailable"})
}
