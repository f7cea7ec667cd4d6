package terminal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

var runCommandOp = &operation{
	name: "run_command",
	description: "Run a shell command line with bash in the workspace and return its exit code and output; " +
		"with is_background, start it and return a process_id at once.",
	risk: tools.RiskHigh,
	long: true,
	schema: func(l tools.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The command line, run by bash -c. Pipes, &&, redirects and subshells work. stdin is empty unless stdin is \"pipe\". You see at most %d bytes of output (head and tail); all of it is kept for read_output."},
    "working_dir": {"type": "string", "description": "Directory to run in, relative to the workspace root (default: the root). It must be inside the workspace."},
    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables. Commands start from a minimal environment (PATH, HOME, LANG and a few more), not toold's."},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds the command may run before it and everything it started are stopped; the output so far is returned. Default: the call's own timeout, which also caps it. For a background process: its lifetime (default: unlimited)."},
    "idle_timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Stop the command when it prints nothing for this many seconds (default: no limit)."},
    "is_background": {"type": "boolean", "description": "Start the command in the background and return its process_id at once (for servers and watchers). Default false."},
    "stdin": {"type": "string", "enum": ["none", "pipe"], "description": "none (default): stdin is empty. pipe: the client feeds the command's stdin while it runs (for programs that read input); only for foreground commands, and only when the client can send input."},
    "outside_sandbox": {"type": "boolean", "description": "Ask a person to run this one command outside toold's sandbox (it then may write outside the workspace, read what the sandbox hides and reach the network directly). Only for a command that cannot work inside it; the person sees the exact command, directory and environment and approves this call only, in every mode. Default false."}
  },
  "required": ["command"],
  "additionalProperties": false
}`, l.OutputBytes)
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		cmd := argString(call, "command")
		dir := orDot(argString(call, "working_dir"))
		d := "Running: " + tools.Clip(cmd, 80)
		if bg, _ := call.Args["is_background"].(bool); bg {
			d = "Starting in the background: " + tools.Clip(cmd, 60)
		}
		e := tools.Effect{Display: d, Risk: tools.RiskHigh, Command: cmd, Dir: dir, CanLeaveSandbox: true}
		if in, _ := call.Args["stdin"].(string); in == "pipe" {
			// What the client feeds the command is not seen by policy: a
			// shell or interpreter would run it. So a person decides.
			e.Unknown = "the command reads input the client sends while it runs (stdin: pipe), which policy does not see"
		}
		if out, _ := call.Args["outside_sandbox"].(bool); out {
			e.OutsideSandbox = true
			e.Display = "Asking to run OUTSIDE the sandbox: " + tools.Clip(cmd, 60)
		}
		if env, ok := call.Args["env"].(map[string]any); ok && len(env) > 0 {
			e.Env = make(map[string]string, len(env))
			for k, v := range env {
				s, _ := v.(string)
				e.Env[k] = s
			}
		}
		return e
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
		var a struct {
			Command      string            `json:"command"`
			WorkingDir   string            `json:"working_dir"`
			Env          map[string]string `json:"env"`
			Timeout      float64           `json:"timeout"`
			IdleTimeout  float64           `json:"idle_timeout"`
			IsBackground bool              `json:"is_background"`
			Stdin        string            `json:"stdin"`
			// OutsideSandbox only asks (see describe); what runs outside
			// is call.Unsandboxed, set by a person's approval.
			OutsideSandbox bool `json:"outside_sandbox"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		cs := commandSpec{
			conv: call.ConversationID, callID: call.ID, command: a.Command, workingDir: a.WorkingDir, env: a.Env,
			timeout: secondsArg(a.Timeout), idle: secondsArg(a.IdleTimeout), background: a.IsBackground,
			unsandboxed: call.Unsandboxed,
		}
		if a.Stdin == "pipe" {
			if sink != nil && sink.Stdin != nil {
				cs.stdin = sink.Stdin()
			}
			switch {
			case a.IsBackground:
				return nil, errdefs.Invalid("/stdin", "stdin", "stdin: \"pipe\" works only for foreground commands; drop is_background or stdin")
			case cs.stdin == nil:
				return nil, errdefs.Invalid("/stdin", "stdin", "this client cannot feed a command's stdin; run the command without stdin: \"pipe\" (give it its input in the command line or a file)")
			}
		}
		started := func(p *process) {
			sink.Started(p.h.Pid())
		}
		if a.IsBackground {
			p, err := t.m.start(ctx, cs, nil)
			if err != nil {
				return nil, err
			}
			started(p)
			return &tools.Result{
				Text: fmt.Sprintf("Started background process %s (pid %d): %s\nRead its output with get_output process_id=%q, wait for it with wait, stop it with kill.",
					p.id, p.h.Pid(), a.Command, p.id),
				Structured: map[string]any{"process_id": p.id, "pid": p.h.Pid(), "call_id": call.ID, "state": "running"},
			}, nil
		}
		p, err := t.m.start(ctx, cs, sink)
		if err != nil {
			if cs.stdin != nil {
				cs.stdin.Close()
			}
			return nil, err
		}
		started(p)
		select {
		case <-p.done:
		case <-ctx.Done():
			why := stopCanceled
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = stopDeadline
			}
			p.stop(why)
			<-p.done
		}
		res := t.commandResult(p)
		p.mu.Lock()
		why := p.why
		p.mu.Unlock()
		more := fmt.Sprintf("; the output so far is above and kept: read_output call_id=%q", call.ID)
		switch why {
		case stopTimeout:
			return res, errdefs.New(errdefs.ErrTimeout, "the command ran longer than its timeout of %s and was stopped with everything it started%s", seconds(p.timeout), more)
		case stopIdle:
			return res, errdefs.New(errdefs.ErrTimeout, "the command printed nothing for %s (idle_timeout) and was stopped with everything it started%s", seconds(p.idle), more)
		case stopCanceled, stopDeadline:
			return res, errdefs.Wrap(errdefs.ErrCanceled, context.Cause(ctx), "the command was stopped with everything it started%s", more)
		case stopShutdown:
			return res, errdefs.New(errdefs.ErrCanceled, "the command was stopped because toold is shutting down")
		}
		return res, nil
	},
}

// commandResult shapes an ended foreground command's result: a status
// line, then the output's head and tail.
func (t *Terminal) commandResult(p *process) *tools.Result {
	limit := t.limits.OutputBytes
	head, tail, total := p.rec.view(limit)
	h, tl, cutFrom, cutTo := cutView(head, tail, total, limit)
	p.mu.Lock()
	exit, outcome, dur := p.exit, p.outcomeLocked(), p.ended.Sub(p.started)
	p.mu.Unlock()
	s := p.rec.snap()
	var b strings.Builder
	fmt.Fprintf(&b, "%s · %s · %s of output\n", outcome, seconds(dur), tools.HumanSize(total))
	if total == 0 {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(cleanText(h))
		if cutTo > cutFrom {
			fmt.Fprintf(&b, "\n… [%s cut: bytes %d to %d; read them with read_output call_id=%q offset=%d, or search with read_output pattern=...] …\n",
				tools.HumanSize(cutTo-cutFrom), cutFrom, cutTo, p.callID, cutFrom)
			b.WriteString(cleanText(tl))
		}
	}
	last := tl
	if len(last) == 0 {
		last = h
	}
	if hint := exitHint(exit.Code, cleanText(last)); hint != "" {
		fmt.Fprintf(&b, "hint: %s\n", hint)
	} else if hint := gitHint(exit.Code, cleanText(last), p.command, filepath.Join(t.m.ws.Dir(), p.dir), p.readOnly); hint != "" {
		fmt.Fprintf(&b, "hint: %s\n", hint)
	}
	res := &tools.Result{
		Text: b.String(),
		Structured: map[string]any{
			"call_id":      p.callID,
			"exit_code":    exit.Code,
			"signal":       exit.SignalName(),
			"duration_ms":  dur.Milliseconds(),
			"output_bytes": total,
			"stdout_bytes": s.stdout,
			"stderr_bytes": s.stderr,
			"leftovers":    exit.Leftovers,
			"stopped":      p.why,
		},
	}
	if cutTo > cutFrom {
		res.Truncation = &tools.Truncation{
			ShownBytes: uint64(len(h) + len(tl)), TotalBytes: uint64(total),
			Continuation: fmt.Sprintf("read_output call_id=%q offset=%d limit=%d", p.callID, cutFrom, limit),
		}
	}
	return res
}

var readOutputOp = &operation{
	name:        "read_output",
	description: "Read or search the kept output of an earlier run_command call (also a background one) by its call_id.",
	risk:        tools.RiskLow,
	schema: func(l tools.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "call_id": {"type": "string", "minLength": 1, "description": "The call_id of the run_command call whose output to read."},
    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (default 0)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Bytes to read (default %d)."},
    "pattern": {"type": "string", "minLength": 1, "description": "A regular expression (RE2): return the matching lines, with their line numbers and byte offsets, instead of a byte range."},
    "ignore_case": {"type": "boolean", "description": "Match pattern case-insensitively."}
  },
  "required": ["call_id"],
  "additionalProperties": false
}`, 4*l.OutputBytes, l.OutputBytes)
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		if p := argString(call, "pattern"); p != "" {
			return tools.Effect{Display: fmt.Sprintf("Searching output of call %s: %s", tools.Clip(argString(call, "call_id"), 30), tools.Clip(p, 40))}
		}
		return tools.Effect{Display: "Reading output of call " + tools.Clip(argString(call, "call_id"), 40)}
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			CallID     string  `json:"call_id"`
			Offset     float64 `json:"offset"`
			Limit      float64 `json:"limit"`
			Pattern    string  `json:"pattern"`
			IgnoreCase bool    `json:"ignore_case"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		rec, err := t.m.store.lookup(call.ConversationID, a.CallID)
		if err != nil {
			return nil, errdefs.Wrap(errdefs.ErrFailed, err, "%s", err.Error())
		}
		if a.Pattern != "" {
			return t.grepOutput(ctx, rec, a.CallID, a.Pattern, a.IgnoreCase)
		}
		limit := t.limits.OutputBytes
		if a.Limit > 0 {
			limit = int(a.Limit)
		}
		s := rec.snap()
		c := s.read(rec.path, int64(a.Offset), limit)
		data := c.data
		if c.next < s.total || !s.done {
			if n := trimPartialRune(data); n > 0 && n < len(data) {
				data, c.next = data[:len(data)-n], c.next-int64(n)
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Output of call %s (%s; %s): bytes %d to %d of %d\n", a.CallID, tools.Clip(rec.command, 60), state(s), c.from, c.next, s.total)
		if c.gapTo > c.gapFrom {
			fmt.Fprintf(&b, "[bytes %d to %d are not available: %s]\n", c.gapFrom, c.gapTo, c.gapWhy)
		}
		writeText(&b, cleanText(data))
		res := &tools.Result{Structured: map[string]any{
			"call_id": a.CallID, "offset": c.from, "next_offset": c.next, "total_bytes": s.total, "running": !s.done,
		}}
		if c.next < s.total {
			fmt.Fprintf(&b, "[%s more: read_output call_id=%q offset=%d]\n", tools.HumanSize(s.total-c.next), a.CallID, c.next)
			res.Truncation = &tools.Truncation{ShownBytes: uint64(len(data)), TotalBytes: uint64(s.total),
				Continuation: fmt.Sprintf("read_output call_id=%q offset=%d", a.CallID, c.next)}
		}
		res.Text = b.String()
		return res, nil
	},
}

// state says whether a record's command runs or how it ended.
func state(s snapshot) string {
	if !s.done {
		return "still running"
	}
	return s.outcome
}

func (t *Terminal) grepOutput(ctx context.Context, rec *record, callID, pattern string, ignoreCase bool) (*tools.Result, error) {
	expr := pattern
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errdefs.Invalid("/pattern", "format", "pattern is not a valid regular expression (RE2 syntax): %v", err)
	}
	ms, total, partial, err := rec.grep(ctx, re, t.limits.SearchMatches, t.limits.LineChars)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrCanceled, err, "the search was canceled")
	}
	s := rec.snap()
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching lines in the output of call %s (%s; %s; %s)\n", total, callID, tools.Clip(rec.command, 60), state(s), tools.HumanSize(s.total))
	items := make([]any, 0, len(ms))
	for _, m := range ms {
		if m.line > 0 {
			fmt.Fprintf(&b, "%d@%d: %s\n", m.line, m.offset, m.text)
		} else {
			fmt.Fprintf(&b, "@%d: %s\n", m.offset, m.text)
		}
		items = append(items, map[string]any{"line": m.line, "offset": m.offset, "text": m.text})
	}
	if partial {
		b.WriteString("[parts of the output were not kept and were not searched]\n")
	}
	res := &tools.Result{Structured: map[string]any{"call_id": callID, "matches": items, "total_matches": total}}
	if total > len(ms) {
		fmt.Fprintf(&b, "[%d more matches not shown; narrow the pattern]\n", total-len(ms))
		res.Truncation = &tools.Truncation{ShownItems: uint64(len(ms)), TotalItems: uint64(total), Continuation: "narrow the pattern"}
	}
	b.WriteString("(lines are LINE@BYTE_OFFSET: read_output offset=BYTE_OFFSET reads from a match)\n")
	res.Text = b.String()
	return res, nil
}

var listProcessesOp = &operation{
	name:        "list_processes",
	description: "List this conversation's background processes with their command, state and output size.",
	risk:        tools.RiskLow,
	schema: func(tools.Limits) string {
		return `{"type": "object", "properties": {}, "additionalProperties": false}`
	},
	describe: func(*Terminal, *tools.Call) tools.Effect {
		return tools.Effect{Display: "Listing background processes"}
	},
	run: func(t *Terminal, _ context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		ps := t.m.processes(call.ConversationID)
		var b strings.Builder
		if len(ps) == 0 {
			b.WriteString("No background processes in this conversation. run_command with is_background starts one.\n")
		}
		items := make([]any, 0, len(ps))
		for _, p := range ps {
			st := "running for " + seconds(time.Since(p.Started).Truncate(time.Second))
			if p.State != "running" {
				st = p.Outcome
			}
			fmt.Fprintf(&b, "%s  pid %d  %s  %s output  [%s]  in %s: %s\n", p.ID, p.PID, p.State, tools.HumanSize(p.OutputBytes), st, p.Dir, tools.Clip(p.Command, 100))
			items = append(items, map[string]any{
				"process_id": p.ID, "call_id": p.CallID, "pid": p.PID, "command": p.Command, "working_dir": p.Dir,
				"state": p.State, "outcome": p.Outcome, "started": p.Started.Format(time.RFC3339), "output_bytes": p.OutputBytes,
			})
		}
		return &tools.Result{Text: b.String(), Structured: map[string]any{"processes": items}}, nil
	},
}

var getOutputOp = &operation{
	name: "get_output",
	description: "Read new output of a background process (process_id) or a terminal session (session_id), " +
		"from where the previous read stopped or from from_index; wait_ms waits for output to arrive.",
	risk: tools.RiskLow,
	schema: func(l tools.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "process_id": {"type": "string", "minLength": 1, "description": "A background process (from run_command with is_background). Give this or session_id."},
    "session_id": {"type": "string", "minLength": 1, "description": "A terminal session (from create_session). Give this or process_id."},
    "from_index": {"type": "integer", "minimum": 0, "description": "Byte index to read from: the next_index of an earlier read (default: where your previous read stopped)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Bytes to return at most (default %d)."},
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "Wait up to this long for output to arrive and settle before returning (default 0: return at once)."},
    "raw": {"type": "boolean", "description": "Return the bytes as they are, escape sequences included (default: cleaned text)."}
  },
  "additionalProperties": false
}`, 4*l.OutputBytes, l.OutputBytes)
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		if id := argString(call, "session_id"); id != "" {
			return tools.Effect{Display: "Reading terminal " + tools.Clip(id, 40)}
		}
		return tools.Effect{Display: "Reading output of process " + tools.Clip(argString(call, "process_id"), 40)}
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			ProcessID string   `json:"process_id"`
			SessionID string   `json:"session_id"`
			FromIndex *float64 `json:"from_index"`
			Limit     float64  `json:"limit"`
			WaitMS    float64  `json:"wait_ms"`
			Raw       bool     `json:"raw"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if (a.ProcessID == "") == (a.SessionID == "") {
			return nil, errdefs.Invalid("/process_id", "oneOf",
				"get_output needs exactly one of process_id (a background process) or session_id (a terminal session)")
		}
		limit := t.limits.OutputBytes
		if a.Limit > 0 {
			limit = int(a.Limit)
		}
		from := int64(-1)
		if a.FromIndex != nil {
			from = int64(*a.FromIndex)
		}
		if a.SessionID != "" {
			s, err := t.m.session(call.ConversationID, a.SessionID)
			if err != nil {
				return nil, err
			}
			return sessionResult(s, s.read(ctx, from, limit, msArg(a.WaitMS)), a.Raw), nil
		}
		p, err := t.m.process(call.ConversationID, a.ProcessID)
		if err != nil {
			return nil, err
		}
		return t.processOutput(ctx, p, from, limit, msArg(a.WaitMS), a.Raw, false), nil
	},
}

// processOutput reads a background process's output from index from (its
// cursor when negative), after waiting up to wait for some; with tail it
// shows the last limit bytes when there is more.
func (t *Terminal) processOutput(ctx context.Context, p *process, from int64, limit int, wait time.Duration, raw, tail bool) *tools.Result {
	p.mu.Lock()
	if from < 0 {
		from = p.cursor
	}
	p.mu.Unlock()
	if wait > 0 {
		p.rec.wait(ctx, from, wait)
	}
	s := p.rec.snap()
	skipped := int64(0)
	if tail && s.total-from > int64(limit) {
		skipped = s.total - int64(limit) - from
		from = s.total - int64(limit)
	}
	c := s.read(p.rec.path, from, limit)
	data := c.data
	if !s.done {
		if n := trimPartialRune(data); n > 0 && n < len(data) {
			data, c.next = data[:len(data)-n], c.next-int64(n)
		}
	}
	p.mu.Lock()
	moved := p.cursor != c.next
	p.cursor = c.next
	p.mu.Unlock()
	if moved {
		p.saveCursor(c.next)
	}
	info := p.info()
	var b strings.Builder
	st := "running"
	if info.State != "running" {
		st = info.Outcome
	}
	fmt.Fprintf(&b, "Process %s (%s): %s; output bytes %d to %d of %d\n", p.id, tools.Clip(p.command, 60), st, c.from, c.next, s.total)
	if skipped > 0 {
		fmt.Fprintf(&b, "[%s before this not shown: get_output process_id=%q from_index=%d, or read_output call_id=%q]\n", tools.HumanSize(skipped), p.id, c.from-skipped, p.callID)
	}
	if c.gapTo > c.gapFrom {
		fmt.Fprintf(&b, "[bytes %d to %d are not available: %s]\n", c.gapFrom, c.gapTo, c.gapWhy)
	}
	if raw {
		writeText(&b, rawText(data))
	} else {
		writeText(&b, cleanText(data))
	}
	if c.next < s.total {
		fmt.Fprintf(&b, "[%s more: get_output process_id=%q from_index=%d]\n", tools.HumanSize(s.total-c.next), p.id, c.next)
	}
	return &tools.Result{
		Text: b.String(),
		Structured: map[string]any{
			"process_id": p.id, "state": info.State, "outcome": info.Outcome, "exit_code": info.ExitCode,
			"from_index": c.from, "next_index": c.next, "total_bytes": s.total,
		},
	}
}

var waitOp = &operation{
	name:        "wait",
	description: "Wait for a background process to exit (or for timeout seconds) and return its state and new output.",
	risk:        tools.RiskLow,
	schema: func(tools.Limits) string {
		return `{
  "type": "object",
  "properties": {
    "process_id": {"type": "string", "minLength": 1, "description": "The background process."},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds to wait at most (default 30; the call's own timeout also applies). The process keeps running when the wait times out."}
  },
  "required": ["process_id"],
  "additionalProperties": false
}`
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		return tools.Effect{Display: "Waiting for process " + tools.Clip(argString(call, "process_id"), 40)}
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			ProcessID string  `json:"process_id"`
			Timeout   float64 `json:"timeout"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		p, err := t.m.process(call.ConversationID, a.ProcessID)
		if err != nil {
			return nil, err
		}
		d := 30 * time.Second
		if a.Timeout > 0 {
			d = secondsArg(a.Timeout)
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
		case <-ctx.Done():
			return nil, errdefs.Wrap(errdefs.ErrCanceled, context.Cause(ctx), "the wait was canceled; the process keeps running")
		}
		return t.processOutput(ctx, p, -1, t.limits.OutputBytes, 0, false, true), nil
	},
}

var killOp = &operation{
	name:        "kill",
	description: "Stop a background process and everything it started (SIGTERM, then SIGKILL after a grace period); returns its last output.",
	risk:        tools.RiskHigh,
	schema: func(tools.Limits) string {
		return `{
  "type": "object",
  "properties": {
    "process_id": {"type": "string", "minLength": 1, "description": "The background process to stop."}
  },
  "required": ["process_id"],
  "additionalProperties": false
}`
	},
	describe: func(t *Terminal, call *tools.Call) tools.Effect {
		id := argString(call, "process_id")
		d := "Stopping process " + tools.Clip(id, 40)
		if p, err := t.m.process(call.ConversationID, id); err == nil {
			d += ": " + tools.Clip(p.command, 60)
		}
		return tools.Effect{Display: d, Risk: tools.RiskHigh}
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			ProcessID string `json:"process_id"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		p, err := t.m.process(call.ConversationID, a.ProcessID)
		if err != nil {
			return nil, err
		}
		if !p.isDone() {
			p.stop(stopKilled)
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return nil, errdefs.Wrap(errdefs.ErrCanceled, context.Cause(ctx), "the call ended while process %s was stopping; it is still being stopped", p.id)
		}
		return t.processOutput(ctx, p, -1, t.limits.OutputBytes, 0, false, true), nil
	},
}

// writeText writes text for the model and ends it with a newline, so that
// a note after it starts on a line of its own.
func writeText(b *strings.Builder, text string) {
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
}
