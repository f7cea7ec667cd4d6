package terminal

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// createWait is how long create_session waits for a new shell's first
// output (its prompt) to return it.
const createWait = time.Second

var createSessionOp = &operation{
	name: "create_session",
	description: "Open a persistent terminal session (an interactive shell on a pseudo-terminal) in the workspace and return its session_id; " +
		"an open session with the same name and working directory is reused, and one with another working directory is restarted.",
	risk: tools.RiskHigh,
	schema: func(tools.Limits) string {
		return `{
  "type": "object",
  "properties": {
    "working_dir": {"type": "string", "description": "Directory the shell starts in, relative to the workspace root (default: the root)."},
    "rows": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Terminal height in lines (default 24)."},
    "cols": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Terminal width in columns (default 80)."},
    "shell": {"type": "string", "minLength": 1, "description": "Program to run, such as bash, sh or python3 (default bash, as a login shell)."},
    "name": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Name of the session within this conversation, to keep several (default \"main\")."}
  },
  "additionalProperties": false
}`
	},
	describe: func(t *Terminal, call *tools.Call) tools.Effect {
		dir := orDot(argString(call, "working_dir"))
		cmd := argString(call, "shell")
		if argv, _, err := t.m.sessionCommand(cmd); err == nil {
			cmd = strings.Join(argv, " ")
		}
		return tools.Effect{Display: "Opening a terminal in " + tools.Clip(dir, 60), Risk: tools.RiskHigh,
			Command: cmd, Dir: dir}
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			WorkingDir string  `json:"working_dir"`
			Rows       float64 `json:"rows"`
			Cols       float64 `json:"cols"`
			Shell      string  `json:"shell"`
			Name       string  `json:"name"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		s, reused, replaced, err := t.m.OpenSession(ctx, call.ConversationID, SessionOptions{
			Name: a.Name, WorkingDir: a.WorkingDir, Shell: a.Shell, Rows: int(a.Rows), Cols: int(a.Cols),
		})
		if err != nil {
			return nil, err
		}
		info := s.Info()
		var b strings.Builder
		switch {
		case reused:
			fmt.Fprintf(&b, "Reusing terminal session %s (%s in %s, %dx%d); it has output up to index %d.\n",
				s.id, strings.Join(info.Command, " "), info.Dir, info.Rows, info.Cols, info.NextIndex)
		case replaced != nil:
			fmt.Fprintf(&b, "Closed terminal session %s (in %s) and started %s (%s in %s, %dx%d).\n",
				replaced.ID, replaced.Dir, s.id, strings.Join(info.Command, " "), info.Dir, info.Rows, info.Cols)
		default:
			fmt.Fprintf(&b, "Started terminal session %s (%s in %s, %dx%d).\n", s.id, strings.Join(info.Command, " "), info.Dir, info.Rows, info.Cols)
		}
		b.WriteString("Type with send_input; read with get_output.\n")
		structured := map[string]any{
			"session_id": s.id, "reused": reused, "working_dir": info.Dir, "command": strings.Join(info.Command, " "),
			"pid": info.PID, "rows": info.Rows, "cols": info.Cols,
		}
		if !reused {
			r := s.read(ctx, 0, t.limits.OutputBytes, createWait)
			fmt.Fprintf(&b, "Output so far (next_index %d):\n%s", r.next, cleanText(r.data))
			structured["next_index"] = r.next
		} else {
			structured["next_index"] = info.NextIndex
		}
		return &tools.Result{Text: b.String(), Structured: structured}, nil
	},
}

var sendInputOp = &operation{
	name: "send_input",
	description: "Type text into a terminal session: end a command with \\n; control characters work (\\u0003 is Ctrl-C, \\u0004 Ctrl-D). " +
		"With wait_ms, also return the output that follows.",
	risk: tools.RiskHigh,
	schema: func(tools.Limits) string {
		return `{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "minLength": 1, "description": "The terminal session."},
    "data": {"type": "string", "minLength": 1, "description": "The keystrokes, as text: \"ls -la\\n\", \"\\u0003\"."},
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "Wait up to this long for output to arrive and settle, and return it like get_output (default 0: return at once)."}
  },
  "required": ["session_id", "data"],
  "additionalProperties": false
}`
	},
	// The text is typed into a shell, so policy judges it as a command line:
	// Effect.Command is the input with line endings as the shell reads them
	// (a terminal turns \r into \n). The session's working directory is in
	// Reads and Writes when the session exists.
	describe: func(t *Terminal, call *tools.Call) tools.Effect {
		id, data := argString(call, "session_id"), argString(call, "data")
		e := tools.Effect{Display: fmt.Sprintf("Typing into terminal %s: %s", tools.Clip(id, 20), tools.Clip(visible(data), 60)),
			Risk: tools.RiskHigh, Command: inputAsCommand(data), Interactive: true}
		if s, err := t.m.session(call.ConversationID, id); err == nil {
			// The line runs where the shell is now, which an earlier line
			// may have changed with cd.
			e.Dir = orDot(s.dir)
			if cwd, ok := s.Cwd(); ok {
				e.Dir = cwd
			}
			// The line is judged as it will be submitted: with what earlier
			// calls typed on it and did not submit.
			typed, known := s.Typed()
			call.Described = typedState{text: typed, known: known}
			e.Command = inputAsCommand(typed + data)
			if !known {
				e.Unknown = "earlier input to this terminal used keys whose effect on the line cannot be followed (tab completion, cursor or history keys)"
			}
			// The shell reads the line only when it is in the foreground; a
			// REPL or an editor does something else with it.
			if prog, shell, ok := s.Foreground(); !ok {
				e.Unknown = "which program in the terminal reads this input cannot be told"
			} else if !shell {
				e.Unknown = fmt.Sprintf("the terminal's foreground program is %s, not the shell: what it does with this input cannot be judged as a command line", prog)
			}
		}
		return e
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			SessionID string  `json:"session_id"`
			Data      string  `json:"data"`
			WaitMS    float64 `json:"wait_ms"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		s, err := t.m.session(call.ConversationID, a.SessionID)
		if err != nil {
			return nil, err
		}
		st, ok := call.Described.(typedState)
		if !ok {
			return nil, errdefs.Failed("the input to terminal session %s was not judged against the session's current line; send it again", a.SessionID)
		}
		if err := s.TypeJudged(st.text, st.known, []byte(a.Data)); err != nil {
			return nil, err
		}
		if a.WaitMS > 0 {
			return sessionResult(s, s.read(ctx, -1, t.limits.OutputBytes, msArg(a.WaitMS)), false), nil
		}
		info := s.Info()
		return &tools.Result{
			Text:       fmt.Sprintf("Sent %d bytes to %s. get_output session_id=%q returns what follows.\n", len(a.Data), s.id, s.id),
			Structured: map[string]any{"session_id": s.id, "bytes": len(a.Data), "next_index": info.NextIndex},
		}, nil
	},
}

// inputAsCommand returns typed text as the shell reads it, for policy.
// typedState is what send_input's Describe saw typed on the line.
type typedState struct {
	text  string
	known bool
}

func inputAsCommand(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// visible shows control characters of typed text for a display line.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			b.WriteString("⏎")
		case r < 0x20:
			b.WriteString("^" + string(rune(r+'@')))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sessionResult shapes a read of a session for the model.
func sessionResult(s *Session, r sessionRead, raw bool) *tools.Result {
	var b strings.Builder
	st := "running"
	if r.exited {
		st = "exited: " + r.outcome
	}
	fmt.Fprintf(&b, "Terminal %s (%s): output %d to %d\n", s.id, st, r.from, r.next)
	if r.dropped > 0 {
		fmt.Fprintf(&b, "[%s before index %d were dropped: the session keeps the last %s]\n", tools.HumanSize(r.dropped), r.from, tools.HumanSize(int64(len(s.out.buf))))
	}
	if len(r.data) == 0 {
		b.WriteString("(no new output)\n")
	} else if raw {
		writeText(&b, rawText(r.data))
	} else {
		writeText(&b, cleanText(r.data))
	}
	if r.behind > 0 {
		fmt.Fprintf(&b, "[%s more: get_output session_id=%q]\n", tools.HumanSize(r.behind), s.id)
	}
	res := &tools.Result{
		Text: b.String(),
		Structured: map[string]any{
			"session_id": s.id, "from_index": r.from, "next_index": r.next, "dropped_bytes": r.dropped,
			"more_bytes": r.behind, "state": map[bool]string{true: "exited", false: "running"}[r.exited],
		},
	}
	if r.behind > 0 {
		res.Truncation = &tools.Truncation{ShownBytes: uint64(len(r.data)), TotalBytes: uint64(len(r.data)) + uint64(r.behind),
			Continuation: fmt.Sprintf("get_output session_id=%q from_index=%d", s.id, r.next)}
	}
	return res
}

var getHistoryOp = &operation{
	name:        "get_history",
	description: "Return the last output a terminal session kept (its scrollback), whatever was read before.",
	risk:        tools.RiskLow,
	schema: func(l tools.Limits) string {
		return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "minLength": 1, "description": "The terminal session."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Bytes to return from the end (default %d)."},
    "raw": {"type": "boolean", "description": "Return the bytes as they are, escape sequences included (default: cleaned text)."}
  },
  "required": ["session_id"],
  "additionalProperties": false
}`, 4*l.OutputBytes, l.OutputBytes)
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		return tools.Effect{Display: "Reading the history of terminal " + tools.Clip(argString(call, "session_id"), 40)}
	},
	run: func(t *Terminal, _ context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			SessionID string  `json:"session_id"`
			Limit     float64 `json:"limit"`
			Raw       bool    `json:"raw"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		s, err := t.m.session(call.ConversationID, a.SessionID)
		if err != nil {
			return nil, err
		}
		limit := t.limits.OutputBytes
		if a.Limit > 0 {
			limit = int(a.Limit)
		}
		r := s.history(limit)
		res := sessionResult(s, r, a.Raw)
		if r.from > r.first {
			res.Text = fmt.Sprintf("[%s of earlier history kept: get_output session_id=%q from_index=%d]\n", tools.HumanSize(r.from-r.first), s.id, r.first) + res.Text
		}
		return res, nil
	},
}

var resizeOp = &operation{
	name:        "resize",
	description: "Set a terminal session's size; programs in it see the new size (SIGWINCH).",
	// Low: it changes how output is laid out, nothing else.
	risk: tools.RiskLow,
	schema: func(tools.Limits) string {
		return `{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "minLength": 1, "description": "The terminal session."},
    "rows": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Height in lines."},
    "cols": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Width in columns."}
  },
  "required": ["session_id", "rows", "cols"],
  "additionalProperties": false
}`
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		return tools.Effect{Display: "Resizing terminal " + tools.Clip(argString(call, "session_id"), 40)}
	},
	run: func(t *Terminal, _ context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			SessionID string  `json:"session_id"`
			Rows      float64 `json:"rows"`
			Cols      float64 `json:"cols"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		s, err := t.m.session(call.ConversationID, a.SessionID)
		if err != nil {
			return nil, err
		}
		if err := s.Resize(int(a.Rows), int(a.Cols)); err != nil {
			return nil, err
		}
		return &tools.Result{
			Text:       fmt.Sprintf("Terminal %s is now %d rows by %d columns.\n", s.id, int(a.Rows), int(a.Cols)),
			Structured: map[string]any{"session_id": s.id, "rows": int(a.Rows), "cols": int(a.Cols)},
		}, nil
	},
}

var closeSessionOp = &operation{
	name:        "close_session",
	description: "Close a terminal session: its shell and everything running in it are stopped (SIGHUP and SIGTERM, then SIGKILL).",
	// Medium: it ends whatever runs in the session, but only in a session
	// of this conversation; nothing outside it is touched.
	risk: tools.RiskMedium,
	schema: func(tools.Limits) string {
		return `{
  "type": "object",
  "properties": {
    "session_id": {"type": "string", "minLength": 1, "description": "The terminal session to close."}
  },
  "required": ["session_id"],
  "additionalProperties": false
}`
	},
	describe: func(_ *Terminal, call *tools.Call) tools.Effect {
		return tools.Effect{Display: "Closing terminal " + tools.Clip(argString(call, "session_id"), 40)}
	},
	run: func(t *Terminal, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			SessionID string `json:"session_id"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		s, err := t.m.session(call.ConversationID, a.SessionID)
		if err != nil {
			return nil, err
		}
		if err := s.Close(ctx); err != nil {
			return nil, err
		}
		info := s.Info()
		return &tools.Result{
			Text:       fmt.Sprintf("Closed terminal session %s (%s).\n", s.id, info.Outcome),
			Structured: map[string]any{"session_id": s.id, "outcome": info.Outcome},
		}, nil
	},
}
