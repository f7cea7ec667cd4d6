package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toold/toold/gen/toold/v1"
)

type hookOptions struct {
	format       string
	ask          string
	conversation string
}

func (a *app) newHookCmd() *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:   "hook --format claude-code|codex|gemini",
		Short: "Judge another agent's tool call with toold's policy, as that agent's pre-tool hook",
		Long: `Read a pre-tool hook event of Claude Code (PreToolUse), Codex (PreToolUse) or
gemini-cli (BeforeTool) on stdin, ask toold's PolicyService how it would
decide the call (its command judge, rules, path guard and the
conversation's grants), and answer in that agent's hook protocol:

  claude-code  allow / deny / ask as hookSpecificOutput.permissionDecision,
               with permissionDecisionReason
  codex        deny as hookSpecificOutput.permissionDecision with the reason;
               allow prints nothing (Codex goes on with its own approvals)
  gemini       {"decision": "allow"} or {"decision": "deny", "reason": ...}

Codex's and gemini-cli's pre-tool hooks cannot ask a person; a call toold
would ask about is denied with the reason (--ask deny, the default) or left
to the agent's own approval flow (--ask pass).

The agent's tools are mapped onto toold's: Bash / run_shell_command ->
run_command, Read / read_file -> read_file, Write / write_file ->
write_file, Edit / MultiEdit / replace -> edit_file, Glob / glob -> glob,
Grep / search_file_content -> grep_search, LS / list_directory -> list_dir,
WebFetch / web_fetch -> web_fetch. A tool toold has no counterpart for is
not judged (allowed as far as toold is concerned). When toold cannot be
reached or cannot judge the call, the hook blocks it (exit 2, the reason on
stderr): it fails closed.

The conversation is the agent's session_id unless --conversation says
otherwise (its grants apply).

The hook runs in the agent's directory: give it the absolute path of the
socket of your project's toold (--socket or TOOLD_SOCKET); with no socket
file there it blocks at once.

Install, Claude Code (the project's .claude/settings.json):
  {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command",
    "command": "toolctl --socket /home/me/project/toold.sock hook --format claude-code"}]}]}}
Codex (~/.codex/hooks.json): the same shape, "toolctl --socket ... hook --format codex".
gemini-cli (settings.json): {"hooks": {"BeforeTool": [{"matcher": ".*",
  "hooks": [{"type": "command", "command": "toolctl --socket ... hook --format gemini"}]}]}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runHook(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "", "the agent's hook protocol: claude-code, codex or gemini")
	f.StringVar(&o.ask, "ask", "deny", "codex and gemini: what a call toold would ask about gets: deny, or pass (the agent's own approvals)")
	f.StringVar(&o.conversation, "conversation", "", "judge in this toold conversation (default: the agent's session_id)")
	return cmd
}

// agentHookEvent is the part of the agents' hook input toolctl reads; the
// three agents share these names.
type agentHookEvent struct {
	SessionID     string         `json:"session_id"`
	Cwd           string         `json:"cwd"`
	HookEventName string         `json:"hook_event_name"`
	ToolName      string         `json:"tool_name"`
	ToolInput     map[string]any `json:"tool_input"`
}

// mapAgentCall maps an agent's tool call onto toold's; ok is false when
// toold has no counterpart.
func mapAgentCall(tool string, in map[string]any) (name string, args map[string]any, ok bool) {
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := in[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	set := func(m map[string]any, k string, v any) {
		if v != nil && v != "" {
			m[k] = v
		}
	}
	args = map[string]any{}
	switch tool {
	case "Bash", "run_shell_command", "shell", "exec_command":
		cmd := str("command", "cmd")
		if cmd == "" {
			if parts, ok := in["command"].([]any); ok { // codex's argv form
				var words []string
				for _, p := range parts {
					words = append(words, fmt.Sprint(p))
				}
				cmd = strings.Join(words, " ")
			}
		}
		set(args, "command", cmd)
		return "run_command", args, true
	case "Read", "read_file":
		set(args, "path", str("file_path", "absolute_path", "path"))
		return "read_file", args, true
	case "Write", "write_file":
		set(args, "path", str("file_path", "path"))
		args["content"] = str("content")
		return "write_file", args, true
	case "Edit", "MultiEdit", "replace":
		set(args, "path", str("file_path", "path"))
		old, nw := str("old_string"), str("new_string")
		if tool == "MultiEdit" {
			if edits, ok := in["edits"].([]any); ok && len(edits) > 0 {
				if e, ok := edits[0].(map[string]any); ok {
					old, _ = e["old_string"].(string)
					nw, _ = e["new_string"].(string)
				}
			}
		}
		args["old_string"], args["new_string"] = old, nw
		return "edit_file", args, true
	case "Glob", "glob":
		set(args, "pattern", str("pattern"))
		set(args, "path", str("path", "dir_path"))
		return "glob", args, true
	case "Grep", "search_file_content", "grep_search":
		set(args, "pattern", str("pattern"))
		set(args, "path", str("path", "dir_path"))
		return "grep_search", args, true
	case "LS", "list_directory":
		set(args, "path", str("path", "dir_path"))
		return "list_dir", args, true
	case "WebFetch", "web_fetch":
		set(args, "url", str("url"))
		return "web_fetch", args, true
	}
	return "", nil, false
}

// hookVerdict is toold's answer, before it is written in a protocol.
type hookVerdict struct {
	decision string // allow, deny, ask, or "" (no opinion)
	reason   string
}

func (a *app) runHook(ctx context.Context, o hookOptions) error {
	switch o.format {
	case "claude-code", "codex", "gemini":
	case "":
		return usageError("--format is required: claude-code, codex or gemini")
	default:
		return usageError("--format %q: want claude-code, codex or gemini", o.format)
	}
	if o.ask != "deny" && o.ask != "pass" {
		return usageError("--ask %q: want deny or pass", o.ask)
	}
	// From here on every failure blocks the call: exit 2, the reason on
	// stderr, which all three agents show as the reason.
	block := func(format string, args ...any) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("toold hook: "+format, args...)}
	}
	b, err := io.ReadAll(io.LimitReader(a.stdin, 16<<20))
	if err != nil {
		return block("reading the hook input: %v", err)
	}
	var ev agentHookEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return block("the hook input is not JSON: %v", err)
	}
	v := hookVerdict{}
	name, args, ok := mapAgentCall(ev.ToolName, ev.ToolInput)
	if ok {
		conv := o.conversation
		if conv == "" {
			conv = ev.SessionID
		}
		st, err := structpb.NewStruct(args)
		if err != nil {
			return block("the tool input cannot be sent: %v", err)
		}
		conn, err := a.connect(ctx)
		if err != nil {
			return block("cannot reach toold, so the call is blocked: %v", err)
		}
		defer conn.Close()
		resp, err := pb.NewPolicyServiceClient(conn).Explain(ctx, &pb.ExplainRequest{
			Name: name, Arguments: &pb.ExplainRequest_ArgumentsStruct{ArgumentsStruct: st}, ConversationId: conv,
		})
		if err != nil {
			return block("toold could not judge the call, so it is blocked: %v", err)
		}
		if e := resp.GetError(); e != nil {
			return block("toold could not judge the call as %s, so it is blocked: %s", name, e.GetMessage())
		}
		v.reason = resp.GetReason()
		if r := resp.GetRule(); r != "" {
			v.reason = strings.TrimSpace(v.reason + " (toold rule " + r + ")")
		}
		switch resp.GetDecision() {
		case pb.Decision_DECISION_ALLOW:
			v.decision = "allow"
		case pb.Decision_DECISION_DENY:
			v.decision = "deny"
		case pb.Decision_DECISION_ASK:
			v.decision = "ask"
		default:
			return block("toold gave no decision for the call, so it is blocked")
		}
	}
	out := hookAnswer(o.format, o.ask, v)
	if out == nil {
		return nil
	}
	bs, _ := json.Marshal(out)
	_, err = fmt.Fprintf(a.stdout, "%s\n", bs)
	return err
}

// hookAnswer writes v in the agent's protocol; nil prints nothing.
func hookAnswer(format, ask string, v hookVerdict) any {
	if v.decision == "ask" && format != "claude-code" {
		if ask == "pass" {
			v.decision = ""
		} else {
			v.decision = "deny"
			v.reason = "toold's policy wants a person to approve this call, and this agent's hooks cannot ask: " + v.reason
		}
	}
	switch format {
	case "claude-code":
		if v.decision == "" {
			return nil
		}
		return map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": v.decision, "permissionDecisionReason": v.reason}}
	case "codex":
		if v.decision != "deny" {
			return nil // Codex's own approval settings apply
		}
		return map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": v.reason}}
	default: // gemini: stdout must be JSON
		switch v.decision {
		case "deny":
			return map[string]any{"decision": "deny", "reason": v.reason}
		case "allow":
			return map[string]any{"decision": "allow"}
		}
		return map[string]any{}
	}
}
