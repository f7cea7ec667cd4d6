package scan

import (
	"testing"
)

func TestParseIgnoreLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want ignoreRule // g compared by kind, lit and pat
	}{
		{"", false, ignoreRule{}},
		{"# comment", false, ignoreRule{}},
		{"   ", false, ignoreRule{}},
		{"node_modules", true, ignoreRule{g: Glob{kind: globExact, lit: "node_modules"}}},
		{"node_modules/", true, ignoreRule{g: Glob{kind: globExact, lit: "node_modules"}, dirOnly: true}},
		{"*.log", true, ignoreRule{g: Glob{kind: globSuffix, lit: ".log"}}},
		{"*.log   ", true, ignoreRule{g: Glob{kind: globSuffix, lit: ".log"}}},
		{"tmp*", true, ignoreRule{g: Glob{kind: globPrefix, lit: "tmp"}}},
		{"!keep.log", true, ignoreRule{g: Glob{kind: globExact, lit: "keep.log"}, negate: true}},
		{`\!bang`, true, ignoreRule{g: Glob{kind: globFull, pat: `\!bang`}}},
		{`\#hash`, true, ignoreRule{g: Glob{kind: globFull, pat: `\#hash`}}},
		{"/build", true, ignoreRule{g: Glob{kind: globExact, lit: "build"}, anchored: true}},
		{"doc/*.txt", true, ignoreRule{g: Glob{kind: globFull, pat: "doc/*.txt"}, anchored: true}},
		{"**/foo", true, ignoreRule{g: Glob{kind: globExact, lit: "foo"}}},
		{"**/foo/bar", true, ignoreRule{g: Glob{kind: globFull, pat: "**/foo/bar"}, anchored: true}},
		{"a/**/b", true, ignoreRule{g: Glob{kind: globFull, pat: "a/**/b"}, anchored: true}},
		{"{x}", true, ignoreRule{g: Glob{kind: globFull, pat: `\{x\}`}}},
		{"trail\\ ", true, ignoreRule{g: Glob{kind: globFull, pat: `trail\ `}}},
		{"[", false, ignoreRule{}},
		{"!", false, ignoreRule{}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, ok := parseIgnoreLine(tt.line)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, got)
			}
			if ok && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIgnoreList(t *testing.T) {
	root := (*IgnoreList)(nil).push(".", parseIgnore([]byte(
		"# root\n*.log\n!keep.log\nbuild/\n/only-root.txt\ndocs/*.tmp\nnode_modules\r\n")))
	sub := root.push("pkg", parseIgnore([]byte("!debug.log\ngen/\n*.tmp\n")))
	tests := []struct {
		list  *IgnoreList
		rel   string
		isDir bool
		want  bool
	}{
		{root, "a.log", false, true},
		{root, "deep/er/a.log", false, true},
		{root, "keep.log", false, false},
		{root, "a.go", false, false},
		{root, "build", true, true},
		{root, "build", false, false}, // a file named build: the rule is for directories
		{root, "src/build", true, true},
		{root, "only-root.txt", false, true},
		{root, "sub/only-root.txt", false, false},
		{root, "docs/x.tmp", false, true},
		{root, "docs/deeper/x.tmp", false, false},
		{root, "node_modules", true, true},
		{sub, "pkg/debug.log", false, false}, // re-included by the deeper file
		{sub, "pkg/other.log", false, true},  // the root's rule still applies
		{sub, "pkg/gen", true, true},
		{sub, "pkg/a.tmp", false, true},
		{sub, "pkg/keep.log", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			name := tt.rel[lastSlash(tt.rel)+1:]
			if got := tt.list.Ignored(tt.rel, name, tt.isDir); got != tt.want {
				t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
			}
		})
	}
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func TestGlobMatcher(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "dir/a.go", false},
		{"*", "abc", true},
		{"*", "a/b", false},
		{"tmp*", "tmpfile", true},
		{"tmp*", "tmp/x", false},
		{"exact", "exact", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "c.go", true},
		{"src/**/*.{ts,tsx}", "src/a/b.tsx", true},
		{"src/**/*.{ts,tsx}", "lib/b.ts", false},
		{"[ab].txt", "b.txt", true},
		{"[!ab].txt", "c.txt", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.s, func(t *testing.T) {
			g, ok := CompileGlob(tt.pattern)
			if !ok {
				t.Fatal("pattern did not compile")
			}
			if got := g.Match(tt.s); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
	var zero Glob
	if zero.Match("x") {
		t.Error("the zero globMatcher matched")
	}
}

// BenchmarkIgnore measures matching one entry against a typical root
// .gitignore (about 40 rules) plus a nested one.
func BenchmarkIgnore(b *testing.B) {
	root := (*IgnoreList)(nil).push(".", parseIgnore([]byte(`
node_modules/
dist/
build/
coverage/
*.log
npm-debug.log*
yarn-debug.log*
.env
.env.*
!.env.example
*.tgz
.cache/
.next/
out/
*.tsbuildinfo
.DS_Store
Thumbs.db
*.swp
*~
/tmp
/vendor
*.pyc
__pycache__/
.pytest_cache/
*.egg-info/
.venv/
target/
*.class
*.o
*.a
*.so
*.dylib
bin/
obj/
docs/_build/
**/generated/**
*.orig
*.rej
`)))
	sub := root.push("packages/app", parseIgnore([]byte("local/\n*.snap\n")))
	b.ResetTimer()
	for b.Loop() {
		sub.Ignored("packages/app/src/components/button/index.tsx", "index.tsx", false)
		sub.Ignored("packages/app/src/components/button", "button", true)
	}
}
