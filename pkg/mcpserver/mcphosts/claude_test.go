package mcphosts_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// claudeEnv is Claude Code's environment against the scripted model,
// offline: the base URL and key of the Messages API, MCP tools offered
// directly (not behind tool search), no telemetry, updates or other
// traffic; and, as a user whose headless runs need toold's tools sets
// (docs/hosts/claude-code.md), `claude -p` waits for its MCP servers to
// connect (CLAUDE_CODE_MCP_STARTUP_WAIT_MS) for up to MCP_TIMEOUT: by
// default Claude Code 2.1.332 does not wait, and a toold that took a few
// seconds to start on a loaded machine left the model with none of its
// tools.
func claudeEnv(home, modelAddr string) []string {
	return []string{
		"HOME=" + home, "NO_COLOR=1",
		"ANTHROPIC_BASE_URL=http://" + modelAddr, "ANTHROPIC_API_KEY=sk-ant-scripted",
		"ENABLE_TOOL_SEARCH=false",
		"CLAUDE_CODE_MCP_STARTUP_WAIT_MS=120000", "MCP_TIMEOUT=120000",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	}
}

// Claude Code 2.1.332 (`claude -p`) runs a whole turn against a scripted
// model with toold added by `claude mcp add`, over stdio (Claude Code
// starts `toold mcp`) and over HTTP (--transport http with the token in a
// header): Claude Code offers the model toold's tools, toold's results
// reach the model, and the delete toold asks about is dismissed by Claude
// Code (headless, it answers every elicitation with cancel), so it is not
// run and the model reads why.
func TestClaudeCodeTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Claude Code")
	}
	claude := need(t, claudeBin)[0]
	toold, _ := binaries(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ns := newNetns(t)
			f := newFixture(t)
			m := newModel(anthropicMessages{}, f.final, f.steps("REJECTED_BY_USER", "the approval request was dismissed in claude-code")...)
			ns.serve(t, m)
			home := t.TempDir()
			env := claudeEnv(home, ns.addr())
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			add := append([]string{"mcp", "add", "toold", "--", toold}, f.tooldArgs()...)
			if tr == "http" {
				f.startDaemon(t, ns, true)
				add = []string{"mcp", "add", "--transport", "http", "toold", httpURL, "--header", "Authorization: Bearer " + httpToken}
			}
			if out, err := run(t, ns.command(ctx, f.ws, env, claude, add...)); err != nil {
				t.Fatalf("claude mcp add: %v\n%s", err, out)
			}
			cmd := ns.command(ctx, f.ws, env, claude, "-p", "Read notes.txt, then run the commands you need.",
				"--allowedTools", "mcp__toold__read_file,mcp__toold__run_command")
			out, err := run(t, cmd)
			checkTools(t, m)
			m.check(t)
			f.checkCanary(t)
			if err != nil || !strings.Contains(out, f.final) {
				t.Errorf("claude -p: %v\n%s", err, out)
			}
		})
	}
}
