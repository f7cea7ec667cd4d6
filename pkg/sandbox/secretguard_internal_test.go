package sandbox

import "testing"

// TestOnTheWay: the home directories the secret guard watches are the
// proper prefixes of the home secrets' patterns (and anything below a
// "**" component), matched per component.
func TestOnTheWay(t *testing.T) {
	pats := []string{".ssh", ".config/gcloud", ".docker/config.json", ".local/share/keyrings", ".config/*/token", "a/**/b"}
	for _, tt := range []struct {
		rel  string
		want bool
	}{
		{".ssh", false}, // the secret itself: sensitive, watched whole
		{".config", true},
		{".config/gcloud", true}, // on the way to .config/*/token
		{".config/other", true},
		{".config/other/deeper", false},
		{".docker", true},
		{".docker/config.json", false},
		{".local", true},
		{".local/share", true},
		{".local/share/other", false},
		{"proj", false},
		{"a", true},
		{"a/x/y/z", true},
		{"b", false},
	} {
		if got := onTheWay(tt.rel, pats); got != tt.want {
			t.Errorf("onTheWay(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
	for _, tt := range []struct {
		dir, p, rel string
		ok          bool
	}{
		{"/h", "/h/x", "x", true},
		{"/h/", "/h/x/y", "x/y", true},
		{"/h", "/h", "", false},
		{"/h", "/hx/y", "", false},
		{"/h", "/", "", false},
	} {
		if rel, ok := below(tt.dir, tt.p); rel != tt.rel || ok != tt.ok {
			t.Errorf("below(%q, %q) = %q, %v", tt.dir, tt.p, rel, ok)
		}
	}
}
