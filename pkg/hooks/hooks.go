// Package hooks runs operator-configured commands before and after tool
// calls, speaking Claude Code's hook protocol, so that hook scripts written
// for Claude Code work unchanged.
//
// # The protocol
//
// A hook is a shell command. It gets one JSON object on stdin:
//
//	{"session_id": CONVERSATION, "transcript_path": "", "cwd": WORKSPACE,
//	 "permission_mode": "default", "hook_event_name": "PreToolUse",
//	 "tool_name": "run_command", "tool_input": {...}, "tool_use_id": CALL_ID}
//
// and, after the call (PostToolUse), "tool_response" as well: the result's
// content, structured data, success and error. Then:
//
//   - exit 0: the call proceeds. If stdout is a JSON object it may decide:
//     hookSpecificOutput.permissionDecision "allow" (toold's ask is skipped;
//     its deny rules still apply), "deny" (the call is refused with
//     permissionDecisionReason for the model), "ask" (a person is asked,
//     with the reason), and hookSpecificOutput.updatedInput replaces the
//     arguments (validated against the tool's schema again);
//     hookSpecificOutput.additionalContext is added to the result for the
//     model. The older top-level "decision": "block"/"approve" with "reason"
//     and "continue": false with "stopReason" (a refusal here) are honoured.
//     Other stdout is ignored.
//   - exit 2: pre: the call is refused and stderr is the reason the model
//     sees; post: stderr is added to the result for the model.
//   - anything else — another exit status, death by a signal, not starting,
//     running past its timeout, stdout that starts like JSON and does not
//     parse, output over the bound — is a failure. A failing pre-hook
//     blocks the call unless its on_error is "proceed" (Claude Code's own
//     behaviour for exit statuses other than 2). A failing post-hook is
//     recorded; the result stands.
//
// Hooks that match a call run one after another in the configured order
// (an updatedInput is what the next hook sees); the first refusal ends the
// run. A hook runs under "sh -c" (bash when Config.Shell says so) in the
// workspace, in its own process group, killed as a group on timeout or when
// the call is canceled; its stdout is bounded by MaxOutputBytes (more is a
// failure) and its stderr is kept up to 64 KiB.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/toold/toold/pkg/hooks/hookconfig"
	"github.com/toold/toold/pkg/procgroup"
)

// Event names of the protocol.
const (
	PreToolUse  = "PreToolUse"
	PostToolUse = "PostToolUse"
)

// Hook is one configured command (see hookconfig.Hook).
type Hook = hookconfig.Hook

// Config lists the hooks (see hookconfig.Config).
type Config = hookconfig.Config

// Runner runs the configured hooks. It is safe for concurrent use.
type Runner struct {
	cfg Config
	dir string
	env []string
}

// New returns a Runner for cfg, running hooks in dir (the workspace).
func New(cfg Config, dir string) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = 1 << 20
	}
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+dir, "TOOLD_WORKSPACE="+dir)
	return &Runner{cfg: cfg, dir: dir, env: env}, nil
}

// Empty reports whether no hook is configured (the executor skips the
// hook steps).
func (r *Runner) Empty() bool { return r == nil || len(r.cfg.Pre)+len(r.cfg.Post) == 0 }

// Call is what the hooks are told about a call.
type Call struct {
	// Conversation is sent as session_id.
	Conversation string
	// CallID is sent as tool_use_id.
	CallID string
	// Name is the flat name sent as tool_name ("read_file"); Tool and
	// Operation are matched too.
	Name, Tool, Operation string
	// Input is the arguments, sent as tool_input.
	Input map[string]any
	// PermissionMode is sent as permission_mode ("default" when empty).
	PermissionMode string
}

// Response is what a post-hook is told about the result (tool_response).
type Response struct {
	Success    bool   `json:"success"`
	Content    string `json:"content,omitempty"`
	Structured any    `json:"structured,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Error      string `json:"error,omitempty"`
	ErrorCode  string `json:"error_code,omitempty"`
}

// Decision is a hook's verdict on a call.
type Decision string

// Decisions. None leaves the call to toold's policy.
const (
	None  Decision = ""
	Allow Decision = "allow"
	Deny  Decision = "deny"
	Ask   Decision = "ask"
)

// Outcome is what one hook run did, for the call's span and the audit log.
type Outcome struct {
	Hook     string
	Event    string
	ExitCode int // -1 when it did not exit normally
	Duration time.Duration
	Decision Decision
	// Failed says why the run counts as a failure ("" when it did not).
	Failed string
	// Amended is true when it changed the input.
	Amended bool
}

// Result is the combined verdict of the hooks that matched a call.
type Result struct {
	// Decision is the strongest verdict: Deny over Ask over Allow.
	Decision Decision
	// Reason explains a Deny or Ask (for the model, or the person asked).
	Reason string
	// Input is the amended arguments when a hook changed them; nil when
	// none did.
	Input map[string]any
	// Context is added to the result for the model (additionalContext, and
	// stderr of a post-hook that exited 2).
	Context []string
	// Messages are systemMessage texts for the person (logged).
	Messages []string
	// Ran lists each hook run in order.
	Ran []Outcome
}

// Pre runs the pre-hooks matching c. An error is returned only when ctx
// ended (the call was canceled); every hook failure is in the Result.
func (r *Runner) Pre(ctx context.Context, c Call) (Result, error) {
	return r.run(ctx, PreToolUse, r.cfg.Pre, c, nil)
}

// Post runs the post-hooks matching c with the call's result.
func (r *Runner) Post(ctx context.Context, c Call, resp Response) (Result, error) {
	return r.run(ctx, PostToolUse, r.cfg.Post, c, &resp)
}

// input is the JSON a hook reads on stdin.
type input struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolUseID      string         `json:"tool_use_id"`
	ToolResponse   *Response      `json:"tool_response,omitempty"`
}

// output is what a hook may print on stdout (Claude Code's fields).
type output struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	SystemMessage      string `json:"systemMessage"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func (r *Runner) run(ctx context.Context, event string, list []Hook, c Call, resp *Response) (Result, error) {
	var res Result
	in := input{
		SessionID: c.Conversation, Cwd: r.dir, PermissionMode: c.PermissionMode, HookEventName: event,
		ToolName: c.Name, ToolInput: c.Input, ToolUseID: c.CallID, ToolResponse: resp,
	}
	if in.PermissionMode == "" {
		in.PermissionMode = "default"
	}
	if in.ToolInput == nil {
		in.ToolInput = map[string]any{}
	}
	for _, h := range list {
		if !matches(h.Match, c) {
			continue
		}
		stdin, err := json.Marshal(in)
		if err != nil {
			return res, err
		}
		out, err := r.exec(ctx, h, event, stdin)
		if err != nil {
			return res, err
		}
		o := &out.Outcome
		if o.Failed != "" {
			res.Ran = append(res.Ran, *o)
			if event == PreToolUse && h.OnError != "proceed" {
				res.Decision = Deny
				res.Reason = fmt.Sprintf("The pre-tool hook %q failed (%s), so the call was blocked.", o.Hook, o.Failed)
				return res, nil
			}
			continue
		}
		if o.ExitCode == 2 {
			reason := strings.TrimSpace(out.stderr)
			if event == PreToolUse {
				o.Decision = Deny
				res.Ran = append(res.Ran, *o)
				if reason == "" {
					reason = fmt.Sprintf("The pre-tool hook %q blocked the call.", o.Hook)
				}
				res.Decision, res.Reason = Deny, reason
				return res, nil
			}
			if reason != "" {
				res.Context = append(res.Context, reason)
			}
			res.Ran = append(res.Ran, *o)
			continue
		}
		if out.json != nil {
			stop := r.apply(event, out.json, o, &res, &in)
			res.Ran = append(res.Ran, *o)
			if stop {
				return res, nil
			}
			continue
		}
		res.Ran = append(res.Ran, *o)
	}
	return res, nil
}

// apply folds one hook's JSON answer into res; it reports whether the run
// ends here (a refusal).
func (r *Runner) apply(event string, j *output, o *Outcome, res *Result, in *input) bool {
	if j.SystemMessage != "" {
		res.Messages = append(res.Messages, j.SystemMessage)
	}
	if j.Continue != nil && !*j.Continue {
		reason := j.StopReason
		if reason == "" {
			reason = fmt.Sprintf("The hook %q stopped the call.", o.Hook)
		}
		if event == PreToolUse {
			o.Decision, res.Decision, res.Reason = Deny, Deny, reason
			return true
		}
		res.Context = append(res.Context, reason)
	}
	d, reason := None, j.Reason
	switch j.Decision {
	case "block":
		d = Deny
	case "approve":
		d = Allow
	}
	if hs := j.HookSpecificOutput; hs != nil {
		switch hs.PermissionDecision {
		case "allow":
			d = Allow
		case "deny":
			d = Deny
		case "ask":
			d = Ask
		}
		if hs.PermissionDecisionReason != "" {
			reason = hs.PermissionDecisionReason
		}
		if hs.AdditionalContext != "" {
			res.Context = append(res.Context, hs.AdditionalContext)
		}
		if event == PreToolUse && len(hs.UpdatedInput) > 0 && string(hs.UpdatedInput) != "null" {
			var m map[string]any
			if err := json.Unmarshal(hs.UpdatedInput, &m); err != nil || m == nil {
				o.Failed = "its updatedInput is not a JSON object"
				o.Decision = Deny
				res.Decision = Deny
				res.Reason = fmt.Sprintf("The pre-tool hook %q failed (%s), so the call was blocked.", o.Hook, o.Failed)
				return true
			}
			o.Amended = true
			res.Input = m
			in.ToolInput = m
		}
	}
	if event == PostToolUse {
		// After the call a "block" cannot undo it: its reason goes to the
		// model, as in Claude Code.
		if d == Deny && reason != "" {
			res.Context = append(res.Context, reason)
		}
		return false
	}
	o.Decision = d
	switch d {
	case Deny:
		if reason == "" {
			reason = fmt.Sprintf("The pre-tool hook %q denied the call.", o.Hook)
		}
		res.Decision, res.Reason = Deny, reason
		return true
	case Ask:
		if res.Decision != Ask {
			res.Decision, res.Reason = Ask, reason
		}
	case Allow:
		if res.Decision == None {
			res.Decision = Allow
			res.Reason = reason
		}
	}
	return false
}

// matches reports whether any pattern matches one of the call's names.
func matches(patterns []string, c Call) bool {
	if len(patterns) == 0 {
		return true
	}
	names := []string{c.Name, c.Tool}
	if c.Tool != "" && c.Operation != "" {
		names = append(names, c.Tool+"."+c.Operation)
	}
	for _, p := range patterns {
		for _, n := range names {
			if n == "" {
				continue
			}
			if ok, _ := path.Match(p, n); ok {
				return true
			}
		}
	}
	return false
}

type execResult struct {
	Outcome
	stderr string
	json   *output
}

const maxStderr = 64 << 10

// exec runs one hook. It returns an error only when ctx ended.
func (r *Runner) exec(ctx context.Context, h Hook, event string, stdin []byte) (execResult, error) {
	name := h.Name
	if name == "" {
		name = h.Command
	}
	res := execResult{Outcome: Outcome{Hook: name, Event: event, ExitCode: -1}}
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(hctx, r.cfg.Shell, "-c", h.Command)
	cmd.Dir = r.dir
	cmd.Env = append(r.env, "TOOLD_HOOK_EVENT="+event)
	cmd.Stdin = bytes.NewReader(stdin)
	stdout := &boundedBuffer{max: r.cfg.MaxOutputBytes}
	stderr := &boundedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	procgroup.KillOnCancel(cmd, true, time.Second)
	start := time.Now()
	err := cmd.Run()
	res.Duration = time.Since(start)
	// Whatever the hook left behind in its group goes with it.
	_ = procgroup.Kill(cmd)
	res.stderr = stderr.String()
	if ctx.Err() != nil {
		return res, context.Cause(ctx)
	}
	var ee *exec.ExitError
	switch {
	case hctx.Err() != nil:
		res.Failed = fmt.Sprintf("it ran past its timeout of %s", timeout)
	case errors.As(err, &ee) && ee.Exited():
		res.ExitCode = ee.ExitCode()
	case errors.As(err, &ee):
		res.Failed = fmt.Sprintf("it was killed by %s", ee.ProcessState.String())
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		res.Failed = fmt.Sprintf("it could not run: %v", err)
	default:
		res.ExitCode = 0
	}
	if res.Failed != "" {
		return res, nil
	}
	if stdout.over {
		res.Failed = fmt.Sprintf("its output exceeded %d bytes", r.cfg.MaxOutputBytes)
		return res, nil
	}
	switch res.ExitCode {
	case 0:
		out := bytes.TrimSpace(stdout.Bytes())
		if len(out) > 0 && out[0] == '{' {
			var j output
			if err := json.Unmarshal(out, &j); err != nil {
				res.Failed = fmt.Sprintf("its output is not valid JSON: %v", err)
				return res, nil
			}
			res.json = &j
		}
	case 2:
	default:
		msg := lastLine(res.stderr)
		res.Failed = fmt.Sprintf("exit status %d", res.ExitCode)
		if msg != "" {
			res.Failed += ": " + msg
		}
	}
	return res, nil
}

// lastLine returns the last line of s, shortened: a traceback's last line
// says what went wrong.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// boundedBuffer keeps at most max bytes, drops the rest and records that
// it did. (It does not embed bytes.Buffer: io.Copy would use its ReadFrom
// and bypass the bound.)
type boundedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if len(p) > room {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil // keep draining, so the hook never blocks
	}
	return b.buf.Write(p)
}

func (b *boundedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *boundedBuffer) String() string { return b.buf.String() }
