package mcphosts_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// geminiHome writes HOME/.gemini/settings.json with toold as the MCP
// server (server is its mcpServers entry, nil for none) and extra
// settings merged in,
// gemini-cli's own switches off the network, and trusts ws (gemini-cli
// starts MCP servers only in a trusted folder).
func geminiHome(t *testing.T, ws string, server map[string]any, extra map[string]any) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{
		"telemetry": map[string]any{"enabled": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	}
	if server != nil {
		settings["mcpServers"] = map[string]any{"toold": server}
	}
	for k, v := range extra {
		settings[k] = v
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(map[string]string{ws: "TRUST_FOLDER"})
	if err := os.WriteFile(filepath.Join(dir, "trustedFolders.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// geminiEnv is gemini-cli's environment against the scripted model: the
// Gemini API's key and base URL.
func geminiEnv(home, modelAddr string) []string {
	return []string{"HOME=" + home, "NO_COLOR=1", "GEMINI_CLI_NO_RELAUNCH=1",
		"GEMINI_API_KEY=scripted-key", "GOOGLE_GEMINI_BASE_URL=http://" + modelAddr}
}

// gemini-cli 0.61.0 (`gemini -p`) runs a whole turn against a scripted
// model with toold in its settings.json, over stdio (gemini-cli starts
// `toold mcp`) and over HTTP (httpUrl, the token in a header from the
// environment): gemini-cli offers the model toold's tools, toold's
// results reach the model, and the delete toold asks about is denied with
// the reason (gemini-cli declares no elicitation). gemini -p does not offer
// toold's write_file (see checkTools below).
func TestGeminiCLITurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gemini-cli")
	}
	p := need(t, nodeBin, geminiJS)
	toold, _ := binaries(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ns := newNetns(t)
			f := newFixture(t)
			m := newModel(geminiAPI{}, f.final, f.steps("DENIED", "cannot show approval requests")...)
			ns.serve(t, m)
			server := map[string]any{"command": toold, "args": f.tooldArgs(), "trust": true}
			if tr == "http" {
				f.startDaemon(t, ns, true)
				server = map[string]any{"httpUrl": httpURL, "headers": map[string]string{"Authorization": "Bearer ${TOOLD_TOKEN}"}, "trust": true}
			}
			home := geminiHome(t, f.ws, server, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			env := append(geminiEnv(home, ns.addr()), "TOOLD_TOKEN="+httpToken)
			cmd := ns.command(ctx, f.ws, env, p[0], p[1], "-p", "Read notes.txt, then run the commands you need.")
			out, err := run(t, cmd)
			// Headless, gemini-cli hides the tools its policy would ask
			// about (its write_file, replace, run_shell_command), and
			// matches MCP tools by their bare name too: toold's
			// write_file is not offered (of toold's tools, only it).
			checkTools(t, m, "write_file")
			m.check(t)
			f.checkCanary(t)
			if err != nil || !strings.Contains(out, f.final) {
				t.Errorf("gemini -p: %v\n%s", err, out)
			}
		})
	}
}
