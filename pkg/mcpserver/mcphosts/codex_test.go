package mcphosts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codexConfig is a CODEX_HOME config.toml: the scripted model as a custom
// provider speaking the Responses API, toold as an MCP server (server is
// the [mcp_servers.toold] table's body, "" for none; codexRequired
// follows it), codex's own switches off the network.
func codexConfig(modelAddr, server string) string {
	c := fmt.Sprintf(`model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted model"
base_url = "http://%s/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
`, modelAddr)
	if server != "" {
		c += "\n[mcp_servers.toold]\n" + server + codexRequired
	}
	return c
}

// codexRequired is what a user who relies on toold's tools writes in its
// table (docs/hosts/codex.md): codex 0.171.0 builds the model's first
// tool list waiting for an optional MCP server only
// mcp_optional_startup_grace_ms (1 s), then sends the request without its
// tools — on a loaded machine `toold mcp`'s start, or codex's handshake
// with a running toold, took longer and the model was offered no tools
// at all. A required server is waited for (startup_timeout_sec, 30 s by
// default, here 120 s) and its failure to start fails codex instead.
const codexRequired = "required = true\nstartup_timeout_sec = 120\n"

func tomlList(xs []string) string {
	var q []string
	for _, x := range xs {
		q = append(q, fmt.Sprintf("%q", x))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// codex 0.171.0 (`codex exec`) runs a whole turn against a scripted model
// with toold in its config.toml, over stdio (codex starts `toold mcp`)
// and over HTTP (a running toold's /mcp, the token from
// bearer_token_env_var): codex offers the model toold's tools, toold's
// results reach the model, and the delete toold asks about is declined by
// codex (headless codex declines every elicitation), so it is not run and
// the model reads why.
func TestCodexTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex")
	}
	codex := need(t, codexBin)[0]
	toold, _ := binaries(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ns := newNetns(t)
			f := newFixture(t)
			m := newModel(openAIResponses{}, f.final, f.steps("REJECTED_BY_USER", "declined in codex-mcp-client")...)
			ns.serve(t, m)
			home := t.TempDir()
			server := fmt.Sprintf("command = %q\nargs = %s\n", toold, tomlList(f.tooldArgs()))
			if tr == "http" {
				f.startDaemon(t, ns, true)
				server = fmt.Sprintf("url = %q\nbearer_token_env_var = \"TOOLD_TOKEN\"\n", httpURL)
			}
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(codexConfig(ns.addr(), server)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := ns.command(ctx, f.ws, []string{"CODEX_HOME=" + home, "HOME=" + home, "SCRIPTED_API_KEY=sk-scripted",
				"TOOLD_TOKEN=" + httpToken, "NO_COLOR=1", "RUST_LOG=warn"},
				codex, "exec", "--skip-git-repo-check", "Read notes.txt, then run the commands you need.")
			out, err := run(t, cmd)
			checkTools(t, m)
			m.check(t)
			f.checkCanary(t)
			if err != nil || !strings.Contains(out, f.final) {
				t.Errorf("codex exec: %v\n%s", err, out)
			}
		})
	}
}
