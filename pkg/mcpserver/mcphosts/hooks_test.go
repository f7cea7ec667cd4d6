package mcphosts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The policy the hook tests give toold: deleting denied.txt (and making
// touched.txt) is denied by a rule whose reason the model must read.
const (
	hookDenyReason = "HOOKDENY: denied.txt is kept by the project's policy"
	hookPolicy     = `rules:
  - name: keep-denied
    decision: deny
    reason: "` + hookDenyReason + `"
    commands: ["rm -f denied.txt"]
  - name: no-touch
    decision: deny
    reason: "HOOKDENY: touched.txt must not be made"
    commands: ["touch touched.txt"]
`
)

// hookFixture is a fixture with a running toold daemon (the hooks' judge)
// under hookPolicy and a second canary, denied.txt.
func hookFixture(t *testing.T, ns *netns) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	policy := filepath.Join(f.state, "policy.yaml")
	if err := os.WriteFile(policy, []byte(hookPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "denied.txt"), []byte("keep me too\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := f.startDaemon(t, ns, false, "--policy", policy)
	return f, sock
}

// hookSteps are the host's own shell tool (name, its command argument)
// called four times: reading a file, which toold allows (its text must
// reach the model; outside toold's sandbox AUTO allows what only inspects
// files), a delete the policy denies (the rule's reason must reach the
// model), a delete toold asks about (ask says how the host's answer
// reads), and a touch the policy denies (as the delete).
func (f *fixture) hookSteps(tool, arg string, extra map[string]any, ask ...string) []step {
	args := func(cmd string) map[string]any {
		a := map[string]any{arg: cmd}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	return []step{
		{tool: tool, own: true, args: args("cat notes.txt"), want: []string{f.fileMarker}},
		{tool: tool, own: true, args: args("rm -f denied.txt"), want: []string{"HOOKDENY"}},
		{tool: tool, own: true, args: args("rm -f canary.txt"), want: ask},
		{tool: tool, own: true, args: args("touch touched.txt"), want: []string{"touched.txt must not be made"}},
	}
}

// checkHookCanaries fails t when a delete the hook stopped happened.
func (f *fixture) checkHookCanaries(t *testing.T) {
	t.Helper()
	f.checkCanary(t)
	if _, err := os.Stat(filepath.Join(f.ws, "denied.txt")); err != nil {
		t.Errorf("the delete toold's policy denied ran anyway: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "touched.txt")); err == nil {
		t.Error("the touch toold's policy denied ran anyway")
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// hookConfig is the hooks object of Claude Code's and codex's settings
// (and, with BeforeTool, gemini-cli's): one pre-tool hook for every tool.
func hookConfig(event, matcher, command string) map[string]any {
	return map[string]any{event: []any{map[string]any{"matcher": matcher,
		"hooks": []any{map[string]any{"type": "command", "command": command}}}}}
}

// Claude Code's PreToolUse hook runs `toolctl hook --format claude-code`
// and toold's policy decides Claude Code's own Bash calls: allowed (the
// output reaches the model), denied with the rule's reason (which reaches
// the model; the file stays), asked about (headless, Claude Code cannot
// ask: it does not run the call and passes toold's reason on).
func TestClaudeCodeHook(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Claude Code")
	}
	claude := need(t, claudeBin)[0]
	_, toolctl := binaries(t)
	ns := newNetns(t)
	f, sock := hookFixture(t, ns)
	m := newModel(anthropicMessages{}, f.final, f.hookSteps("Bash", "command", nil, "needs approval: it deletes files")...)
	ns.serve(t, m)
	home := t.TempDir()
	writeJSON(t, filepath.Join(home, ".claude", "settings.json"), map[string]any{
		"hooks": hookConfig("PreToolUse", "*", fmt.Sprintf("%s --socket %s hook --format claude-code", toolctl, sock))})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := ns.command(ctx, f.ws, claudeEnv(home, ns.addr()), claude, "-p", "Run the commands you need.", "--allowedTools", "Bash")
	out, err := run(t, cmd)
	m.check(t)
	f.checkHookCanaries(t)
	if err != nil || !strings.Contains(out, f.final) {
		t.Errorf("claude -p: %v\n%s", err, out)
	}
}

// codex's PreToolUse hook (with --dangerously-bypass-hook-trust) runs
// `toolctl hook --format codex` and toold's policy decides codex's own
// shell calls: allowed, denied with the rule's reason, and a call toold
// would ask about denied (codex's hooks cannot ask), each answer reaching
// the model. Without that flag headless codex skips the hook silently: a
// command the policy denies (and codex's own rules let through) runs,
// which docs/hosts/codex.md warns of.
func TestCodexHook(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex")
	}
	codex := need(t, codexBin)[0]
	_, toolctl := binaries(t)
	for _, bypass := range []bool{true, false} {
		t.Run(map[bool]string{true: "bypass hook trust", false: "hooks untrusted"}[bypass], func(t *testing.T) {
			ns := newNetns(t)
			f, sock := hookFixture(t, ns)
			steps := f.hookSteps("exec_command", "cmd", nil, "this agent's hooks cannot ask")
			if !bypass {
				steps = []step{{tool: "exec_command", own: true, args: map[string]any{"cmd": "touch touched.txt"}}}
			}
			m := newModel(openAIResponses{}, f.final, steps...)
			ns.serve(t, m)
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(codexConfig(ns.addr(), "")), 0o600); err != nil {
				t.Fatal(err)
			}
			writeJSON(t, filepath.Join(home, "hooks.json"), map[string]any{
				"hooks": hookConfig("PreToolUse", "*", fmt.Sprintf("%s --socket %s hook --format codex", toolctl, sock))})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			args := []string{"exec", "--skip-git-repo-check", "Run the commands you need."}
			if bypass {
				args = append(args[:2], append([]string{"--dangerously-bypass-hook-trust"}, args[2:]...)...)
			}
			cmd := ns.command(ctx, f.ws, []string{"CODEX_HOME=" + home, "HOME=" + home, "SCRIPTED_API_KEY=sk-scripted", "NO_COLOR=1", "RUST_LOG=warn"}, codex, args...)
			out, err := run(t, cmd)
			m.check(t)
			if err != nil || !strings.Contains(out, f.final) {
				t.Errorf("codex exec: %v\n%s", err, out)
			}
			if bypass {
				f.checkHookCanaries(t)
				return
			}
			if _, err := os.Stat(filepath.Join(f.ws, "touched.txt")); err != nil {
				t.Errorf("without --dangerously-bypass-hook-trust codex did not run the command toold's policy denies (%v): did it run the hook after all? (update docs/hosts/codex.md)", err)
			}
		})
	}
}

// gemini-cli's BeforeTool hook runs `toolctl hook --format gemini` and
// toold's policy decides gemini-cli's own run_shell_command calls:
// allowed, denied with the rule's reason, and a call toold would ask about
// denied (gemini-cli's hooks cannot ask), each answer reaching the model.
func TestGeminiCLIHook(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gemini-cli")
	}
	p := need(t, nodeBin, geminiJS)
	_, toolctl := binaries(t)
	ns := newNetns(t)
	f, sock := hookFixture(t, ns)
	m := newModel(geminiAPI{}, f.final, f.hookSteps("run_shell_command", "command", nil, "this agent's hooks cannot ask")...)
	ns.serve(t, m)
	home := geminiHome(t, f.ws, nil, map[string]any{
		"hooks": hookConfig("BeforeTool", ".*", fmt.Sprintf("%s --socket %s hook --format gemini", toolctl, sock))})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := ns.command(ctx, f.ws, geminiEnv(home, ns.addr()), p[0], p[1], "--approval-mode", "yolo", "-p", "Run the commands you need.")
	out, err := run(t, cmd)
	m.check(t)
	f.checkHookCanaries(t)
	if err != nil || !strings.Contains(out, f.final) {
		t.Errorf("gemini -p: %v\n%s", err, out)
	}
}
