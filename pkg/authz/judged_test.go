package authz_test

import (
	"slices"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/tools"
)

// TestVerdictJudged checks which paths of an effect the verdict lists as
// plain (tools.JudgedPath), which a file tool may open where policy found
// them without resolving them again: only an existing path inside the
// workspace reached through no symlink and no "..", and only when the call
// may run.
func TestVerdictJudged(t *testing.T) {
	f := newFixture(t)
	e := f.engine(t, nil, nil)
	for _, c := range []struct {
		name  string
		req   *authz.Request
		plain []string // the paths listed, in order
	}{
		{"a file in the root", readReq(authz.ModeAuto, "README.md"), []string{"README.md"}},
		{"a file below", readReq(authz.ModeAuto, "src/main.go"), []string{"src/main.go"}},
		{"dots and slashes", readReq(authz.ModeAuto, "./src//main.go"), []string{"./src//main.go"}},
		{"absolute inside", readReq(authz.ModeAuto, f.ws+"/src/main.go"), []string{f.ws + "/src/main.go"}},
		{"the root", readReq(authz.ModeAuto, "."), []string{"."}},
		{"two, one plain", readReq(authz.ModeAuto, "inner/main.go", "docs/readme.md"), []string{"docs/readme.md"}},
		{"through a symlinked directory", readReq(authz.ModeAuto, "inner/main.go"), nil},
		{"a symlink to a file", readReq(authz.ModeAuto, "link-env"), nil},
		{"dot-dot that stays inside", readReq(authz.ModeAuto, "src/../README.md"), nil},
		{"missing", readReq(authz.ModeAuto, "src/new.go"), nil},
		{"outside", readReq(authz.ModeYOLO, f.out+"/file.txt"), nil},
		{"tilde", readReq(authz.ModeAuto, "~/notes.txt"), nil},
		{"denied", readReq(authz.ModeAuto, "README.md", ".env"), nil},
		{"asked", readReq(authz.ModeAsk, "README.md"), []string{"README.md"}},
		{"a write", writeReq(authz.ModeYOLO, "docs/readme.md"), []string{"docs/readme.md"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := authorize(t, e, c.req)
			var got []string
			for _, j := range v.Judged {
				got = append(got, j.Given)
				loc, err := f.w.Resolve(j.Given)
				if err != nil || loc.Abs != j.Abs || !loc.Inside {
					t.Errorf("%q judged at %s, resolves to %+v (%v)", j.Given, j.Abs, loc, err)
				}
				if lex, ok := f.w.Lexical(j.Given); !ok || lex.Abs != j.Abs {
					t.Errorf("%q judged at %s, names %s lexically", j.Given, j.Abs, lex.Abs)
				}
			}
			if !slices.Equal(got, c.plain) {
				t.Errorf("%s: Judged %v, want %v (decision %v)", c.name, got, c.plain, v.Decision)
			}
		})
	}
	// A command's paths are its own: never listed.
	v := authorize(t, e, &authz.Request{ConversationID: "conv", Mode: authz.ModeYOLO, Tool: "run_command", Operation: "run_command",
		Risk: tools.RiskHigh, Effect: tools.Effect{Command: "cat README.md src/main.go", Reads: []string{"."}}})
	if len(v.Judged) != 0 {
		t.Errorf("a command line's paths listed as judged: %v", v.Judged)
	}
}
