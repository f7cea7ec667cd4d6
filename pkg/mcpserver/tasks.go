package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/events"
)

// The tasks extension of MCP 2026-07-28 (SEP-2663,
// "io.modelcontextprotocol/tasks"): a client that declares it in a
// request's capabilities gets a long call — an operation marked
// tools.OperationSpec.Long: run_command, run_task, the tools of toold's MCP
// servers — as a task. tools/call answers at once with the task
// (resultType "task", taskId, status, ttlMs, pollIntervalMs) while the call
// runs in toold; the client polls tasks/get (status, the latest progress as
// statusMessage, and once terminal the tool's result inlined), answers a
// question the call asks (an approval, a tool's question: status
// "input_required" with inputRequests) with tasks/update, and ends the call
// with tasks/cancel. A short call, or one from a client that does not
// declare the extension, answers in the request as before.
//
// go-sdk v1.8.0 has no task types, but its server takes custom methods
// (AddReceivingCustomMethod: tasks/get, tasks/update, tasks/cancel, typed
// here) and receiving middleware that sees tools/call before its handler
// (taskMiddleware returns the task instead of the tool's result). So the
// extension is this file, over the SDK, with no JSON-RPC layer of toold's
// own. The tasks extension removed tasks/result and tasks/list: they stay
// unknown methods (-32601).
//
// A task id is a random 128-bit name and the only handle on a task, like an
// input-required round's requestState: every client of /mcp holds toold's
// token, and a task belongs to whoever holds its id.

// TasksExtension is the name of the tasks extension in capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

const (
	// taskTTL is how long a task stays readable after its last change
	// (so at least that long after its creation: the ttlMs a client is
	// told). A running task never expires.
	taskTTL = time.Hour
	// taskPollInterval is the pollIntervalMs suggested to clients.
	taskPollInterval = time.Second
	// maxEndedTasks bounds the ended tasks kept for their clients; the
	// oldest go first.
	maxEndedTasks = 1000
	// taskInputTimeout bounds how long a task waits for the answer to a
	// question (as roundTimeout does for an input-required round).
	taskInputTimeout = roundTimeout
)

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

const (
	resultTypeTask     = "task"
	resultTypeComplete = "complete"
)

// taskFields are the Task of SEP-2663, shared by the result that creates a
// task and by tasks/get.
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// createTaskResult is tools/call's answer when the call became a task.
type createTaskResult struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
	taskFields
}

// detailedTask is tasks/get's answer: the task, and by its status the
// questions waiting for answers, the tool's result, or the protocol error
// the call failed with.
type detailedTask struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
	taskFields
	InputRequests sdk.InputRequestMap `json:"inputRequests,omitempty"`
	Result        *sdk.CallToolResult `json:"result,omitempty"`
	Error         *jsonrpc.Error      `json:"error,omitempty"`
}

// taskParams are the params of tasks/get and tasks/cancel.
type taskParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

// updateTaskParams are the params of tasks/update: answers to the task's
// input requests, by their keys. An answer is kept raw until its key is
// known to name a pending question (unknown keys are ignored).
type updateTaskParams struct {
	sdk.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// ackResult is the empty answer of tasks/update and tasks/cancel.
type ackResult struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
}

// task is one long call running (or ended) as an MCP task.
type task struct {
	id      string
	created time.Time
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	status   string
	message  string // statusMessage: the latest progress, or why it ended
	updated  time.Time
	inputs   map[string]*taskInput // questions waiting for answers
	result   *sdk.CallToolResult   // completed
	failure  *jsonrpc.Error        // failed
	canceled bool                  // tasks/cancel asked
	shutdown bool                  // toold is closing
}

// taskInput is a question of a task waiting for its answer.
type taskInput struct {
	q      *sdk.ElicitParams
	answer chan *sdk.ElicitResult // buffered: one answer
}

// tasks holds a Server's tasks.
type tasks struct {
	mu    sync.Mutex
	tasks map[string]*task
}

func (ts *tasks) get(id string) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.tasks[id]
}

// add keeps t, and drops ended tasks whose TTL passed (and the oldest ended
// ones beyond maxEndedTasks).
func (ts *tasks) add(t *task) {
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var ended []*task
	for id, o := range ts.tasks {
		o.mu.Lock()
		done, updated := o.terminal(), o.updated
		o.mu.Unlock()
		switch {
		case !done:
		case now.Sub(updated) > taskTTL:
			delete(ts.tasks, id)
		default:
			ended = append(ended, o)
		}
	}
	if n := len(ended) - maxEndedTasks + 1; n > 0 {
		slices.SortFunc(ended, func(a, b *task) int { return a.created.Compare(b.created) })
		for _, o := range ended[:n] {
			delete(ts.tasks, o.id)
		}
	}
	ts.tasks[t.id] = t
}

// closeAll ends every running task: toold is shutting down.
func (ts *tasks) closeAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.tasks {
		t.mu.Lock()
		t.shutdown = true
		t.mu.Unlock()
		t.cancel(errdefs.New(errdefs.ErrCanceled, "toold is shutting down"))
	}
}

// terminal reports whether the task ended. t.mu is held.
func (t *task) terminal() bool {
	return t.status == taskCompleted || t.status == taskFailed || t.status == taskCancelled
}

// touch records a change. t.mu is held.
func (t *task) touch() { t.updated = time.Now() }

func (t *task) fields() taskFields {
	return taskFields{
		TaskID:         t.id,
		Status:         t.status,
		StatusMessage:  t.message,
		CreatedAt:      t.created.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt:  t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs:          taskTTL.Milliseconds(),
		PollIntervalMs: taskPollInterval.Milliseconds(),
	}
}

// detail is the task as tasks/get shows it.
func (t *task) detail() *detailedTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := &detailedTask{ResultType: resultTypeComplete, taskFields: t.fields(), Result: t.result, Error: t.failure}
	if len(t.inputs) > 0 {
		d.InputRequests = sdk.InputRequestMap{}
		for k, in := range t.inputs {
			d.InputRequests[k] = in.q
		}
	}
	return d
}

// setMessage makes a progress message the task's statusMessage.
func (t *task) setMessage(msg string) {
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.terminal() {
		t.message = msg
		t.touch()
	}
}

// elicit is the task's way to ask the person: the question becomes one of
// the task's input requests (status input_required) until tasks/update
// answers it, the call ends, or taskInputTimeout passes (the question is
// then declined by the host, as a client that never answers).
func (t *task) elicit(ctx context.Context, q *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	key := newID("input-")
	in := &taskInput{q: q, answer: make(chan *sdk.ElicitResult, 1)}
	t.mu.Lock()
	t.inputs[key] = in
	t.status = taskInputRequired
	t.touch()
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.inputs, key)
		if len(t.inputs) == 0 && t.status == taskInputRequired {
			t.status = taskWorking
			t.touch()
		}
		t.mu.Unlock()
	}()
	timer := time.NewTimer(taskInputTimeout)
	defer timer.Stop()
	select {
	case a := <-in.answer:
		return a, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-timer.C:
		return nil, errdefs.New(errdefs.ErrDenied, "the MCP client did not answer the task's input request within %s", taskInputTimeout)
	}
}

// answer delivers tasks/update's answers to the questions they name;
// answers to no pending question are ignored. An answer that is not an
// elicitation result is an invalid-params error, and nothing is delivered.
func (t *task) answer(responses map[string]json.RawMessage) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	answers := map[*taskInput]*sdk.ElicitResult{}
	for k, raw := range responses {
		in := t.inputs[k]
		if in == nil {
			continue
		}
		var a sdk.ElicitResult
		if err := json.Unmarshal(raw, &a); err != nil || a.Action == "" {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses[" + k + "] is not an elicitation result (action, content)"}
		}
		answers[in] = &a
	}
	for in, a := range answers {
		for k, o := range t.inputs {
			if o == in {
				delete(t.inputs, k) // answered: no longer shown
			}
		}
		in.answer <- a
	}
	if len(answers) > 0 && len(t.inputs) == 0 && t.status == taskInputRequired {
		t.status = taskWorking
		t.touch()
	}
	return nil
}

// finish records the call's end.
func (t *task) finish(res *sdk.CallToolResult, end *events.End) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inputs = map[string]*taskInput{}
	t.touch()
	switch {
	case t.canceled && end.Err != nil:
		t.status, t.message = taskCancelled, "canceled by the client"
	case t.shutdown && end.Err != nil:
		t.status, t.message = taskFailed, "toold shut down while the call ran"
		t.failure = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: t.message}
	case end.Err != nil && errors.Is(end.Err, errdefs.ErrInternal):
		// A failure of toold itself, not of the tool: a protocol-level
		// error. The message is the one a gRPC client gets (INTERNAL
		// errors say nothing of toold's insides).
		t.status, t.message = taskFailed, "toold failed to run the call"
		t.failure = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: errdefs.As(end.Err).Msg}
	default:
		// A tool's error (a failed command, a denied approval) is the
		// tool's result, isError, as in a call without a task.
		t.status, t.message, t.result = taskCompleted, "", res
	}
}

// declaresTasks reports whether a request's client declares the tasks
// extension: in the request's _meta (2026-07-28), or else in the session's
// initialize.
func declaresTasks(meta sdk.Meta, ss *sdk.ServerSession) bool {
	if caps, ok := meta[sdk.MetaKeyClientCapabilities].(map[string]any); ok {
		ext, _ := caps["extensions"].(map[string]any)
		_, ok := ext[TasksExtension]
		return ok
	}
	if caps, ok := meta[sdk.MetaKeyClientCapabilities].(*sdk.ClientCapabilities); ok && caps != nil {
		_, ok := caps.Extensions[TasksExtension]
		return ok
	}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.Capabilities != nil {
			_, ok := p.Capabilities.Extensions[TasksExtension]
			return ok
		}
	}
	return false
}

// errTasksNotDeclared answers a tasks/* request of a client that did not
// declare the extension (SEP-2575's missing required client capability).
func errTasksNotDeclared() error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: sdk.CodeMissingRequiredClientCapabilities,
		Message: "the tasks methods need the client capability extensions[\"" + TasksExtension + "\"] in the request's _meta", Data: data}
}

func errUnknownTask(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: "taskId " + strings.ToValidUTF8(id, "?") + " names no task at this toold (unknown, or expired " + taskTTL.String() + " after it ended)"}
}

// registerTasks adds the extension's methods to srv (the SDK server of the
// 2026-07-28 era) and the middleware that turns long calls into tasks.
func (s *Server) registerTasks(srv *sdk.Server) {
	lookup := func(meta sdk.Meta, ss *sdk.ServerSession, id string) (*task, error) {
		if !declaresTasks(meta, ss) {
			return nil, errTasksNotDeclared()
		}
		t := s.tasks.get(id)
		if t == nil {
			return nil, errUnknownTask(id)
		}
		return t, nil
	}
	must := func(err error) {
		if err != nil {
			panic(err) // a method name the SDK calls standard: a bug here
		}
	}
	must(sdk.AddReceivingCustomMethod(srv, "tasks/get", func(_ context.Context, ss *sdk.ServerSession, p *taskParams) (*detailedTask, error) {
		t, err := lookup(p.Meta, ss, p.TaskID)
		if err != nil {
			return nil, err
		}
		return t.detail(), nil
	}))
	must(sdk.AddReceivingCustomMethod(srv, "tasks/update", func(_ context.Context, ss *sdk.ServerSession, p *updateTaskParams) (*ackResult, error) {
		t, err := lookup(p.Meta, ss, p.TaskID)
		if err != nil {
			return nil, err
		}
		if err := t.answer(p.InputResponses); err != nil {
			return nil, err
		}
		return &ackResult{ResultType: resultTypeComplete}, nil
	}))
	must(sdk.AddReceivingCustomMethod(srv, "tasks/cancel", func(_ context.Context, ss *sdk.ServerSession, p *taskParams) (*ackResult, error) {
		t, err := lookup(p.Meta, ss, p.TaskID)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		running := !t.terminal()
		if running {
			t.canceled = true
		}
		t.mu.Unlock()
		if running {
			t.cancel(errdefs.New(errdefs.ErrCanceled, "the MCP client canceled the task"))
		}
		return &ackResult{ResultType: resultTypeComplete}, nil
	}))
	srv.AddReceivingMiddleware(s.taskMiddleware)
}

// taskMiddleware answers a tools/call of a long operation with a task when
// the request is of the 2026-07-28 era and declares the extension (and is
// not a round of an input-required call); every other request goes on to
// the SDK.
func (s *Server) taskMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		creq, ok := req.(*sdk.CallToolRequest)
		if method != "tools/call" || !ok || !isNewEra(creq) || creq.Params.RequestState != "" || !declaresTasks(creq.Params.Meta, creq.Session) {
			return next(ctx, method, req)
		}
		target, long := s.longTarget(creq.Params.Name)
		if !long {
			return next(ctx, method, req)
		}
		return &createTaskResult{ResultType: resultTypeTask, taskFields: s.startTask(creq, target)}, nil
	}
}

// longTarget returns the registry name an MCP tool calls and whether its
// calls are long.
func (s *Server) longTarget(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.long[name]
	return o, ok
}

// startTask runs the call in the background, detached from the request,
// as a task kept before it is returned (a tasks/get right after the answer
// finds it). It returns the task as created (working).
func (s *Server) startTask(req *sdk.CallToolRequest, target string) taskFields {
	h := newHost(req, target)
	h.token = nil // the request ends now: progress becomes the statusMessage
	ctx, cancel := context.WithCancelCause(context.Background())
	now := time.Now()
	t := &task{id: newID("toold-task-"), created: now, updated: now, cancel: cancel, status: taskWorking, inputs: map[string]*taskInput{}}
	h.elicit = t.elicit
	h.status = t.setMessage
	creq := s.callRequest(req, h, target)
	created := t.fields()
	s.tasks.add(t)
	go func() {
		defer cancel(nil)
		end := s.opts.Executor.Run(ctx, creq, h)
		t.finish(h.withTrace(toResult(end)), end)
	}()
	return created
}
