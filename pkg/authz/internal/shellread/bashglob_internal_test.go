package shellread

import "testing"

// Globs match as bash matches them; forms the judge cannot translate are
// reported so that they ask.
func TestGlobMatch(t *testing.T) {
	for _, tt := range []struct {
		pat, name   string
		matched, ok bool
	}{
		{".[!x]nv", ".env", true, true},
		{".[^x]nv", ".env", true, true},
		{".[!e]nv", ".env", false, true},
		{"[[:alpha:]]d_rsa", "id_rsa", true, true},
		{"[]i]d_rsa", "id_rsa", true, true},
		{"id_rs[a-]", "id_rsa", true, true},
		{"*.pem", "server.pem", true, true},
		{"?env", "xenv", true, true},
		{`\*`, "*", true, true},
		{`\*`, "x", false, true},
		{"[[=e=]]nv", "env", false, false},
	} {
		m, ok := GlobMatch(tt.pat, tt.name)
		if m != tt.matched || ok != tt.ok {
			t.Errorf("globMatch(%q, %q) = %v, %v; want %v, %v", tt.pat, tt.name, m, ok, tt.matched, tt.ok)
		}
	}
}
