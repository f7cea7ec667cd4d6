package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
	"github.com/toold/toold/pkg/testenv"
)

func endedTask(id string, age time.Duration) *task {
	at := time.Now().Add(-age)
	return &task{id: id, created: at, updated: at, status: taskCompleted, cancel: func(error) {}, inputs: map[string]*taskInput{}}
}

// Ended tasks stay readable for taskTTL after their last change, at most
// maxEndedTasks of them (the oldest go first); running tasks never expire.
func TestTaskRetention(t *testing.T) {
	ts := tasks{tasks: map[string]*task{}}
	running := endedTask("running", 2*taskTTL)
	running.status = taskWorking
	ts.add(running)
	ts.add(endedTask("expired", taskTTL+time.Minute))
	if ts.get("expired") == nil {
		t.Fatal("a task was dropped as it was added")
	}
	ts.add(endedTask("fresh", taskTTL-time.Minute)) // adding sweeps
	if ts.get("expired") != nil {
		t.Error("a task past its TTL is still kept")
	}
	if ts.get("fresh") == nil || ts.get("running") == nil {
		t.Error("a task within its TTL, or a running one, was dropped")
	}
	for i := range maxEndedTasks + 5 {
		ts.add(endedTask(fmt.Sprintf("t%d", i), time.Duration(maxEndedTasks+5-i)*time.Second))
	}
	ended := 0
	for _, o := range ts.tasks {
		if o.terminal() {
			ended++
		}
	}
	if ended != maxEndedTasks || ts.get("t0") != nil || ts.get(fmt.Sprintf("t%d", maxEndedTasks+4)) == nil || ts.get("running") == nil {
		t.Errorf("%d ended tasks kept (want %d, the newest)", ended, maxEndedTasks)
	}
}

// A task's questions: two pending at once, answered one at a time (the
// answered one leaves inputRequests), an answer that is no elicitation
// result refused, unknown keys ignored; how the call ended decides the
// status.
func TestTaskInputsAndEnds(t *testing.T) {
	tk := endedTask("t", 0)
	tk.status = taskWorking
	ctx := context.Background()
	got := make(chan string, 2)
	for _, q := range []string{"first?", "second?"} {
		go func() {
			a, err := tk.elicit(ctx, &sdk.ElicitParams{Message: q})
			if err != nil {
				got <- err.Error()
				return
			}
			got <- q + a.Action
		}()
	}
	var keys []string
	testenv.Until(10*time.Second, func() bool {
		keys = keys[:0]
		for k := range tk.detail().InputRequests {
			keys = append(keys, k)
		}
		return len(keys) == 2
	})
	if len(keys) != 2 || tk.detail().Status != taskInputRequired {
		t.Fatalf("two pending questions: %+v", tk.detail())
	}
	if err := tk.answer(map[string]json.RawMessage{keys[0]: json.RawMessage(`{"nope":1}`)}); err == nil {
		t.Fatal("an answer without an action was taken")
	}
	if err := tk.answer(map[string]json.RawMessage{keys[0]: json.RawMessage(`{"action":"accept"}`), "unknown": json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	<-got
	d := tk.detail()
	if _, still := d.InputRequests[keys[0]]; still || len(d.InputRequests) != 1 || d.Status != taskInputRequired {
		t.Fatalf("after one answer: %+v", d)
	}
	if err := tk.answer(map[string]json.RawMessage{keys[1]: json.RawMessage(`{"action":"decline"}`)}); err != nil {
		t.Fatal(err)
	}
	<-got
	if d := tk.detail(); d.Status != taskWorking || len(d.InputRequests) != 0 {
		t.Fatalf("after both answers: %+v", d)
	}

	for _, tt := range []struct {
		name               string
		canceled, shutdown bool
		err                error
		status             string
		code               int64
	}{
		{"result", false, false, nil, taskCompleted, 0},
		{"tool error", false, false, errdefs.Failed("exit 1"), taskCompleted, 0},
		{"internal", false, false, errdefs.New(errdefs.ErrInternal, "broke"), taskFailed, jsonrpc.CodeInternalError},
		{"cancelled", true, false, errdefs.New(errdefs.ErrCanceled, "canceled"), taskCancelled, 0},
		{"cancel too late", true, false, nil, taskCompleted, 0},
		{"shutdown", false, true, errdefs.New(errdefs.ErrCanceled, "shutting down"), taskFailed, jsonrpc.CodeInternalError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk := endedTask("t", 0)
			tk.status, tk.canceled, tk.shutdown = taskWorking, tt.canceled, tt.shutdown
			end := &events.End{Err: tt.err}
			tk.finish(toResult(end), end)
			d := tk.detail()
			if d.Status != tt.status || (tt.code != 0) != (d.Error != nil) || (d.Error != nil && d.Error.Code != tt.code) || (d.Status == taskCompleted) != (d.Result != nil) {
				t.Fatalf("%+v", d)
			}
		})
	}
}
