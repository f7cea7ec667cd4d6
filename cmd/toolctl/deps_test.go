package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// toolctlLinks is every package of toold's that toolctl may link: the
// client, the generated API, the error vocabulary and configuration value
// types (the MCP section and its conversion, for toolctl mcp add). A daemon
// package — the policy engine, a plugin, a store, the sandbox — would make
// the CLI carry SQLite, PostgreSQL or the shell reader for a type it needs.
var toolctlLinks = []string{
	"github.com/toold/toold/cmd/toolctl",
	"github.com/toold/toold/gen/toold/v1",
	"github.com/toold/toold/pkg/client",
	"github.com/toold/toold/pkg/errdefs",
	"github.com/toold/toold/pkg/config/value",
	"github.com/toold/toold/pkg/mcp/mcpconfig",
	"github.com/toold/toold/pkg/service/mcppb",
}

// TestToolctlLinksNoDaemonInternals fails when toolctl's dependencies gain
// a package of toold's outside toolctlLinks.
func TestToolctlLinksNoDaemonInternals(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := 0
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/toold/toold/") {
			continue
		}
		seen++
		if !slices.Contains(toolctlLinks, p) {
			t.Errorf("toolctl links %s; it may link only %s", p, strings.Join(toolctlLinks, ", "))
		}
	}
	if seen < 3 {
		t.Fatalf("go list found %d of toold's packages in toolctl's dependencies: %q", seen, out)
	}
}
