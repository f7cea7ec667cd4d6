// Package testenv gates tests on what the machine has (cgroups, Landlock, a
// pseudo-terminal, git, the MCP peers). A test that lacks one skips, saying
// what is missing; with TOOLD_REQUIRE_PEERS set (make test sets it, as CI
// runs it) it fails instead, so a capability the CI machine has cannot go
// missing unnoticed behind a skip.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RequireEnv is the variable that turns skips into failures.
const RequireEnv = "TOOLD_REQUIRE_PEERS"

// Required reports whether missing capabilities fail tests.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Need skips t (or fails it, when Required) unless err is nil. what names
// the capability and how to get it ("Landlock ABI >= 6", "git: make
// net-deps").
func Need(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("%s: %v", what, err)
	if Required() {
		t.Fatalf("%s (%s is set: this machine is expected to have it)", msg, RequireEnv)
	}
	t.Skip(msg + "; skipping")
}
