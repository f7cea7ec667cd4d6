// Package vcs is the build_and_version_control tool: git through the git
// binary, parsed into structured results (git_status, git_diff, git_log,
// git_show, git_branch, git_commit), and the project's tasks (list_tasks,
// run_task through the terminal manager).
//
// git runs with a minimal environment, no pager, editor, prompt or hook,
// and with every program-valued setting a repository's config could carry
// overridden on the command line, so a hostile .git/config runs nothing.
// git_commit never pushes.
package vcs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// Options configure the tool.
type Options struct {
	// Root is the workspace directory (absolute).
	Root string
	// Terminal runs run_task's command line (terminal_operations'
	// run_command); nil makes run_task unavailable.
	Terminal tools.Tool
	// Limits shape results.
	Limits tools.Limits
	// Hooks lets git run the repository's hooks (default off).
	Hooks bool
	// Git is the git binary (default: git from PATH).
	Git string
	// Exec runs git as the commands of terminal_operations run — in the
	// sandbox, so that what a planted repository makes git run
	// (core.fsmonitor, filters, hooks) is confined like any command. It
	// returns git's exit status (-1 for a signal) and an error only when
	// git could not run or ctx ended. Nil runs git as toold's own child,
	// unconfined. (*terminal.Manager).Exec implements it.
	Exec func(ctx context.Context, path string, args, env []string, dir string, stdout, stderr io.Writer) (int, error)
}

// VCS is the build_and_version_control tool.
type VCS struct {
	opts    Options
	root    string
	gitPath string
	spec    tools.Spec
	ops     map[string]*operation

	// expanded holds run_task's command line as Describe made it, so the
	// command that runs is the one policy judged, even if a task file
	// changes in between.
	mu       sync.Mutex
	expanded map[*tools.Call]expandedTask
}

type expandedTask struct {
	task    *Task
	command string
	at      time.Time
}

var _ tools.Tool = (*VCS)(nil)

// ToolName is the tool's name.
const ToolName = "build_and_version_control"

type operation struct {
	name, description string
	risk              tools.Risk
	long              bool // tools.OperationSpec.Long
	schema            string
	describe          func(v *VCS, call *tools.Call) tools.Effect
	run               func(v *VCS, ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error)
}

// New builds the tool. A zero Root makes every call fail UNAVAILABLE.
func New(opts Options) *VCS {
	v := &VCS{opts: opts, root: opts.Root, ops: map[string]*operation{}, expanded: map[*tools.Call]expandedTask{}}
	v.opts.Limits = opts.Limits.WithDefaults()
	v.gitPath = opts.Git
	if v.gitPath == "" {
		v.gitPath, _ = exec.LookPath("git")
	}
	var specs []tools.OperationSpec
	for _, op := range operations {
		v.ops[op.name] = op
		specs = append(specs, tools.OperationSpec{Name: op.name, Description: op.description, Risk: op.risk, Schema: json.RawMessage(op.schema), Long: op.long})
	}
	v.spec = tools.Spec{
		Name:   ToolName,
		Source: "builtin",
		Description: "Version control and project tasks in the workspace: git status, diff, log, show, branches and commits " +
			"(structured results; never pushes), and the project's tasks (Makefile targets, package.json scripts, justfile, " +
			"Taskfile.yml, .vscode/tasks.json): list_tasks finds them, run_task runs one like run_command.",
		Operations: specs,
	}
	return v
}

var operations = []*operation{
	gitStatusOp, gitDiffOp, gitLogOp, gitShowOp, gitBranchOp, gitCommitOp, listTasksOp, runTaskOp,
}

// Spec implements tools.Tool.
func (v *VCS) Spec() tools.Spec { return v.spec }

// Describe implements tools.Tool.
func (v *VCS) Describe(call *tools.Call) tools.Effect {
	op, ok := v.ops[call.Operation]
	if !ok {
		return tools.Effect{Display: "Version control: " + tools.Clip(call.Operation, 40), Risk: tools.RiskHigh}
	}
	e := op.describe(v, call)
	if e.Risk == tools.RiskUnknown {
		e.Risk = op.risk
	}
	return e
}

// Run implements tools.Tool.
func (v *VCS) Run(ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
	op, ok := v.ops[call.Operation]
	if !ok {
		return nil, errdefs.New(errdefs.ErrToolNotFound, "%s has no operation %q", ToolName, call.Operation)
	}
	if v.root == "" {
		return nil, errdefs.New(errdefs.ErrUnavailable, "%s is not available on this toold", ToolName)
	}
	return op.run(v, ctx, call, sink)
}

func bind(call *tools.Call, a any) error {
	if err := call.Bind(a); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalidArgument, err, "bad arguments: %v", err)
	}
	return nil
}

// shapeText cuts text to the output limit, saying so.
func (v *VCS) shapeText(text string) (string, *tools.Truncation) {
	limit := v.opts.Limits.OutputBytes
	if len(text) <= limit {
		return text, nil
	}
	cut := limit
	for cut > 0 && text[cut]&0xC0 == 0x80 {
		cut--
	}
	return text[:cut] + fmt.Sprintf("\n… [cut: shown %d of %d bytes; narrow the call with paths, or n]", cut, len(text)),
		&tools.Truncation{ShownBytes: uint64(cut), TotalBytes: uint64(len(text)), Continuation: "narrow the call with paths (git_diff, git_show) or n (git_log)"}
}

func stringsArg(call *tools.Call, name string) []string {
	var out []string
	if xs, ok := call.Args[name].([]any); ok {
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func strArg(call *tools.Call, name string) string {
	s, _ := call.Args[name].(string)
	return s
}

func joinPreview(xs []string) string {
	return tools.Clip(strings.Join(xs, " "), 60)
}
