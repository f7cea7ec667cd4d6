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
// server (server is its mcpServers entry) and extra settings merged in,
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
		"mcpServers": map[string]any{"toold": server},
		"telemetry":  map[string]any{"enabled": false},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"general":    map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"security":   map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
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
// model with toold in its settings.json over stdio: toold's results reach
// the model, and the delete toold asks about is denied with the reason
// (gemini-cli declares no elicitation).
func TestGeminiCLITurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gemini-cli")
	}
	p := need(t, nodeBin, geminiJS)
	toold, _ := binaries(t)
	ns := newNetns(t)
	f := newFixture(t)
	m := newModel(geminiAPI{}, f.final, f.steps("DENIED", "cannot show approval requests")...)
	ns.serve(t, m)
	home := geminiHome(t, f.ws, map[string]any{"command": toold, "args": f.tooldArgs(), "trust": true}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := ns.command(ctx, f.ws, geminiEnv(home, ns.addr()), p[0], p[1], "-p", "Read notes.txt, then run the commands you need.")
	out, err := run(t, cmd)
	m.check(t)
	f.checkCanary(t)
	if err != nil || !strings.Contains(out, f.final) {
		t.Errorf("gemini -p: %v\n%s", err, out)
	}
}
