// Package terminal implements terminal_operations, the consolidated
// built-in tool that runs shell commands, background processes and
// persistent terminal sessions in the workspace, and the Manager that owns
// them.
//
// Operations (each also callable by its flat name):
//
//	run_command     {command, working_dir, env, timeout, idle_timeout, is_background}
//	read_output     {call_id, offset, limit, pattern, ignore_case}
//	list_processes  {}
//	get_output      {process_id | session_id, from_index, limit, wait_ms, raw}
//	wait            {process_id, timeout}
//	kill            {process_id}
//	create_session  {working_dir, rows, cols, shell, name}
//	send_input      {session_id, data, wait_ms}
//	get_history     {session_id, limit, raw}
//	resize          {session_id, rows, cols}
//	close_session   {session_id}
//
// Commands run as Shell -c COMMAND, stdin at /dev/null, in a process tree
// supervised by a helper (see pkg/sandbox): when a command exits, times
// out, goes idle, is canceled or killed, its whole tree is stopped —
// SIGTERM, then SIGKILL after the kill grace — grandchildren that called
// setsid included, and every process is reaped.
//
// Output: a foreground command's stdout and stderr stream to the client as
// output chunks while it runs. The model gets a head and tail view
// (tools.Limits.OutputBytes) with a note of what was cut; the whole output
// is kept (see store) and read_output reads or searches it by the call's
// id. Text for the model is cleaned (cleanText: ANSI sequences removed,
// carriage-return overwrites applied, valid UTF-8); output chunks and
// raw=true reads keep the bytes as they were.
//
// get_output serves both background processes and sessions: both are byte
// streams with absolute indexes, read from an index (default: where the
// previous read of this conversation stopped) to a next_index. One
// operation with one index name is simpler for a model than two that
// differ only in their id; exactly one of process_id and session_id is
// required, and giving neither or both is an INVALID_ARGUMENTS error that
// says so.
//
// Adding an operation is a new *operation and one entry in the operations
// table below.
package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// ToolName is the name of the tool.
const ToolName = "terminal_operations"

// Terminal is the terminal_operations tool. It is safe for concurrent use;
// its state lives in the Manager.
type Terminal struct {
	m      *Manager
	limits tools.Limits
	spec   tools.Spec
	ops    map[string]*operation
}

var (
	_ tools.Tool           = (*Terminal)(nil)
	_ tools.ProcessStarter = (*Terminal)(nil)
)

// StartsProcess implements tools.ProcessStarter: run_command reports its
// process (Executing carries its pid).
func (t *Terminal) StartsProcess(call *tools.Call) bool { return call.Operation == "run_command" }

// operation is one operation of Terminal.
type operation struct {
	name, description string
	risk              tools.Risk
	// long marks an operation whose calls may run for minutes
	// (tools.OperationSpec.Long).
	long bool
	// schema returns the JSON Schema of the arguments; it may quote limits.
	schema func(l tools.Limits) string
	// describe says what a call would do; it does no I/O.
	describe func(t *Terminal, call *tools.Call) tools.Effect
	// run executes a call; errors are of an errdefs class.
	run func(t *Terminal, ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error)
}

// operations lists the operations in the order the model sees them. Keep
// the order stable: it is part of the tool's schema, which clients cache.
var operations = []*operation{
	runCommandOp,
	readOutputOp,
	listProcessesOp,
	getOutputOp,
	waitOp,
	killOp,
	createSessionOp,
	sendInputOp,
	getHistoryOp,
	resizeOp,
	closeSessionOp,
}

const toolDescription = "Run shell commands and use persistent terminals in the workspace. " +
	"run_command runs a command line with bash (stdin is empty, so nothing can wait for input) and returns its exit code and output " +
	"(stdout and stderr interleaved; long output shows its head and tail, and the whole is kept: read_output reads or searches it by the call's call_id). " +
	"A timeout or idle_timeout stops the command and everything it started, and returns the output so far. " +
	"Set is_background for servers and watchers: it returns a process_id at once; get_output reads its output, wait waits for it, kill stops it, list_processes lists them. " +
	"For interactive programs (prompts, REPLs, debuggers) use a terminal session: create_session, then send_input to type " +
	"(end a line with \\n; \\u0003 is Ctrl-C) and get_output to read what appeared since you last read (wait_ms waits for it). " +
	"Processes and sessions belong to this conversation and keep running between calls until killed or closed. " +
	"A command cannot leave processes running after it exits: they are stopped; use is_background instead."

// New returns the tool over m. Zero fields of limits take the values of
// tools.DefaultLimits. m stays owned by the caller, who closes it after the
// tool is no longer used. With a nil m the tool only describes itself: its
// calls fail with ErrUnavailable.
func New(m *Manager, limits tools.Limits) *Terminal {
	t := &Terminal{m: m, limits: limits.WithDefaults(), ops: make(map[string]*operation, len(operations))}
	specs := make([]tools.OperationSpec, 0, len(operations))
	for _, op := range operations {
		specs = append(specs, tools.OperationSpec{
			Name:        op.name,
			Description: op.description,
			Risk:        op.risk,
			Schema:      json.RawMessage(op.schema(t.limits)),
			Long:        op.long,
		})
		t.ops[op.name] = op
	}
	t.spec = tools.Spec{Name: ToolName, Description: toolDescription, Operations: specs, Source: "builtin"}
	if m != nil && filepath.Base(m.shell) != "bash" {
		t.spec = forShell(t.spec, filepath.Base(m.shell))
	}
	return t
}

// forShell rewrites what spec tells the model about bash for the shell sh
// that runs commands here (see checkSyntax).
func forShell(spec tools.Spec, sh string) tools.Spec {
	r := strings.NewReplacer(
		"with bash", "with "+sh+" (POSIX sh syntax only: no arrays, <(...) or <<<)",
		"run by bash -c", "run by "+sh+" -c (POSIX sh syntax only)",
		"default bash, as a login shell", "default "+sh,
	)
	spec.Description = r.Replace(spec.Description)
	ops := make([]tools.OperationSpec, len(spec.Operations))
	for i, op := range spec.Operations {
		op.Description = r.Replace(op.Description)
		op.Schema = json.RawMessage(r.Replace(string(op.Schema)))
		ops[i] = op
	}
	spec.Operations = ops
	return spec
}

// Spec implements tools.Tool. The returned value shares its schemas with
// the tool; callers must not modify them.
func (t *Terminal) Spec() tools.Spec { return t.spec }

// Describe implements tools.Tool: a display line, the risk, and for
// run_command the exact command line in Effect.Command (policy judges every
// sub-command of it) with the working directory in Effect.Dir; for
// send_input the typed text as Effect.Command (see sendInputOp). An unknown
// operation gets a generic description; Run reports the error.
func (t *Terminal) Describe(call *tools.Call) tools.Effect {
	op, ok := t.ops[call.Operation]
	if !ok {
		return tools.Effect{Display: "Terminal operation: " + tools.Clip(call.Operation, 40), Risk: tools.RiskHigh}
	}
	if t.m == nil {
		return tools.Effect{Display: "Terminal operation: " + call.Operation, Risk: op.risk}
	}
	e := op.describe(t, call)
	if e.Risk == tools.RiskUnknown {
		e.Risk = op.risk
	}
	return e
}

// Run implements tools.Tool. Errors are ErrInvalidArgument, ErrDenied (a
// working directory outside the workspace), ErrFailed (an unknown process
// or session, a command that cannot start), ErrTimeout (timeout or
// idle_timeout, with the output so far in the result), ErrCanceled,
// ErrResourceExhausted (too many processes or sessions) and ErrUnavailable
// (toold is shutting down). A command that exits non-zero is a success
// with its exit code. sink may be nil.
func (t *Terminal) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	op, ok := t.ops[call.Operation]
	if !ok {
		return nil, &errdefs.Error{Class: errdefs.ErrToolNotFound,
			Msg: fmt.Sprintf("%s has no operation %q; use one of %s", ToolName, call.Operation, strings.Join(opNames(), ", "))}
	}
	if err := ctx.Err(); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrCanceled, err, "%s was canceled", call.Operation)
	}
	if t.m == nil {
		return nil, errdefs.New(errdefs.ErrUnavailable, "%s is not available on this toold", ToolName)
	}
	return op.run(t, ctx, call, sink)
}

func opNames() []string {
	names := make([]string, len(operations))
	for i, op := range operations {
		names[i] = op.name
	}
	return names
}

// bind decodes the call's arguments into v, turning a failure into an
// ErrInvalidArgument error.
func bind(call *tools.Call, v any) error {
	if err := call.Bind(v); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "arguments of %s do not fit its schema: %v", call.Operation, err)
	}
	return nil
}

// argString returns a string argument, "" when absent.
func argString(call *tools.Call, name string) string {
	s, _ := call.Args[name].(string)
	return s
}

// secondsArg converts a number of seconds from the model to a duration.
func secondsArg(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// msArg converts milliseconds from the model to a duration.
func msArg(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// orDot returns p, or "." when empty.
func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}
