package config

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
)

// TestComposesSectionsOnly fails when pkg/config links a package of
// toold's other than the value types and the plugins' section packages
// (leaves named *config): the core config composes sections and imports no
// plugin.
func TestComposesSectionsOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := 0
	for _, p := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(p, "github.com/toold/toold/")
		if !ok {
			continue
		}
		seen++
		last := rest[strings.LastIndex(rest, "/")+1:]
		if rest != "pkg/config" && rest != "pkg/config/value" && !strings.HasSuffix(last, "config") {
			t.Errorf("pkg/config links %s, which is not a configuration section", p)
		}
	}
	if seen < 3 {
		t.Fatalf("go list found %d of toold's packages in pkg/config's dependencies: %q", seen, out)
	}
}

// TestApprovalModes holds validMode to the names authz.ParseMode reads.
func TestApprovalModes(t *testing.T) {
	for _, s := range []string{"", "yolo", "auto", "ask", "ASK", "Auto", "strict", "no", " ask"} {
		_, perr := authz.ParseMode(s)
		verr := validMode(s)
		if (perr == nil) != (verr == nil) {
			t.Errorf("approval_mode %q: authz.ParseMode says %v, config says %v", s, perr, verr)
		}
	}
}
