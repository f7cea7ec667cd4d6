package fileops

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

// outsideTree makes a directory outside any workspace for the read tests and
// returns its resolved path:
//
//	.gitignore      y.go   (above a walk of a/: must not apply there)
//	a/x.txt         alpha
//	a/sub/y.go      alpha
//	a/.gitignore    ignored.txt
//	a/ignored.txt   alpha ignored
//	ab/z.txt        alpha ab   (a name that starts like a/)
//	b/x.txt         alpha beta (a sibling of a/)
func outsideTree(t *testing.T) string {
	t.Helper()
	dir := outsideDir(t)
	writeTree(t, dir, map[string]string{
		".gitignore":    "y.go\n",
		"a/x.txt":       "alpha\n",
		"a/sub/y.go":    "package y // alpha\n",
		"a/.gitignore":  "ignored.txt\n",
		"a/ignored.txt": "alpha ignored\n",
		"ab/z.txt":      "alpha ab\n",
		"b/x.txt":       "alpha beta\n",
	})
	return dir
}

// TestReadOutside reads outside the workspace: where the call's policy
// verdict allowed it (call.Outside), and only there.
func TestReadOutside(t *testing.T) {
	out := outsideTree(t)
	o := func(p string) string { return filepath.Join(out, p) }
	f, _ := newTool(t, tools.Limits{}, map[string]string{
		"in.txt":     "alpha inside\n",
		".gitignore": "x.txt\n", // the workspace's: must not apply outside
		"lnk":        "->" + o("a"),
		"flnk":       "->" + o("a/x.txt"),
		"sub/up":     "->../..",
	})
	rel, err := filepath.Rel(f.ws.Dir(), o("a/x.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		op      string
		args    map[string]any
		outside []string
		want    []string // in the text
		not     []string // not in the text
		path    string   // Structured["path"], when set
		denied  bool     // want ErrDenied "outside the workspace"
	}{
		// read_file
		{name: "read approved file", op: "read_file", args: map[string]any{"path": o("a/x.txt")}, outside: []string{o("a/x.txt")},
			want: []string{"     1\talpha"}, path: o("a/x.txt")},
		{name: "read below approved dir", op: "read_file", args: map[string]any{"path": o("a/sub/y.go")}, outside: []string{o("a")},
			want: []string{"package y"}, path: o("a/sub/y.go")},
		{name: "read by relative path", op: "read_file", args: map[string]any{"path": rel}, outside: []string{o("a")},
			want: []string{"alpha"}, path: o("a/x.txt")},
		{name: "read through dir symlink", op: "read_file", args: map[string]any{"path": "lnk/x.txt"}, outside: []string{o("a")},
			want: []string{"alpha"}, path: o("a/x.txt")},
		{name: "read through file symlink", op: "read_file", args: map[string]any{"path": "flnk"}, outside: []string{o("a/x.txt")},
			want: []string{"alpha"}, path: o("a/x.txt")},
		{name: "read unapproved", op: "read_file", args: map[string]any{"path": o("a/x.txt")}, denied: true},
		{name: "read unapproved symlink", op: "read_file", args: map[string]any{"path": "flnk"}, denied: true},
		{name: "read unapproved dir symlink", op: "read_file", args: map[string]any{"path": "lnk/x.txt"}, outside: []string{o("b")}, denied: true},
		{name: "read sibling", op: "read_file", args: map[string]any{"path": o("b/x.txt")}, outside: []string{o("a")}, denied: true},
		{name: "read same prefix", op: "read_file", args: map[string]any{"path": o("ab/z.txt")}, outside: []string{o("a")}, denied: true},
		{name: "read parent", op: "read_file", args: map[string]any{"path": o("secret.txt")}, outside: []string{o("a")}, denied: true},
		{name: "read dotdot out of approved", op: "read_file", args: map[string]any{"path": o("a") + "/../b/x.txt"}, outside: []string{o("a")}, denied: true},
		{name: "read via symlink to parent", op: "read_file", args: map[string]any{"path": "sub/up/x"}, outside: []string{o("a")}, denied: true},
		{name: "inside unchanged", op: "read_file", args: map[string]any{"path": "in.txt"}, outside: []string{o("a")},
			want: []string{"alpha inside"}, path: "in.txt"},

		// list_dir
		{name: "list approved dir", op: "list_dir", args: map[string]any{"path": o("a"), "depth": 2}, outside: []string{o("a")},
			want: []string{"sub/\n  y.go (", "x.txt (6 B)", ".gitignore (", "(1 entry matched by .gitignore not listed.)"},
			not:  []string{"ignored.txt"}, path: o("a")},
		{name: "list through dir symlink", op: "list_dir", args: map[string]any{"path": "lnk"}, outside: []string{o("a")},
			want: []string{"sub/", "x.txt"}, path: o("a")},
		{name: "list unapproved", op: "list_dir", args: map[string]any{"path": o("a")}, denied: true},
		{name: "list sibling", op: "list_dir", args: map[string]any{"path": o("b")}, outside: []string{o("a")}, denied: true},
		{name: "list parent", op: "list_dir", args: map[string]any{"path": out}, outside: []string{o("a")}, denied: true},

		// glob
		{name: "glob approved dir", op: "glob", args: map[string]any{"pattern": "**/*", "path": o("a")}, outside: []string{o("a")},
			want: []string{o("a/sub") + "/\n" + o("a/sub/y.go") + "\n" + o("a/x.txt")}, not: []string{"ignored", "beta"}, path: o("a")},
		{name: "glob absolute pattern", op: "glob", args: map[string]any{"pattern": o("a") + "/**/*.go"}, outside: []string{o("a")},
			want: []string{o("a/sub/y.go")}, not: []string{"x.txt"}},
		{name: "glob through dir symlink", op: "glob", args: map[string]any{"pattern": "*.txt", "path": "lnk"}, outside: []string{o("a")},
			want: []string{o("a/x.txt")}},
		{name: "glob unapproved", op: "glob", args: map[string]any{"pattern": "*", "path": o("a")}, denied: true},
		{name: "glob unapproved pattern", op: "glob", args: map[string]any{"pattern": o("b") + "/*"}, outside: []string{o("a")}, denied: true},
		{name: "glob parent", op: "glob", args: map[string]any{"pattern": "**/*.txt", "path": out}, outside: []string{o("a")}, denied: true},

		// grep_search
		{name: "grep approved dir", op: "grep_search", args: map[string]any{"pattern": "alpha", "path": o("a")}, outside: []string{o("a")},
			want: []string{o("a/sub/y.go") + ":1:package y // alpha\n" + o("a/x.txt") + ":1:alpha"},
			not:  []string{"ignored", "beta", " ab"}, path: o("a")},
		{name: "grep include with slash", op: "grep_search", args: map[string]any{"pattern": "alpha", "path": o("a"), "include": "sub/*.go"}, outside: []string{o("a")},
			want: []string{o("a/sub/y.go") + ":1:"}, not: []string{"x.txt"}},
		{name: "grep approved file", op: "grep_search", args: map[string]any{"pattern": "alpha", "path": o("a/x.txt")}, outside: []string{o("a/x.txt")},
			want: []string{o("a/x.txt") + ":1:alpha"}},
		{name: "grep through dir symlink", op: "grep_search", args: map[string]any{"pattern": "alpha", "path": "lnk"}, outside: []string{o("a")},
			want: []string{o("a/x.txt") + ":1:alpha"}},
		{name: "grep unapproved", op: "grep_search", args: map[string]any{"pattern": "alpha", "path": o("a")}, denied: true},
		{name: "grep sibling", op: "grep_search", args: map[string]any{"pattern": "alpha", "path": o("b")}, outside: []string{o("a")}, denied: true},

		// read_many_files
		{name: "read many", op: "read_many_files", args: map[string]any{"paths": []string{o("a/x.txt"), o("a") + "/**/*.go", "in.txt", o("b/x.txt")}},
			outside: []string{o("a")},
			want: []string{
				"==> " + o("a/x.txt") + " <==\n     1\talpha\n",
				"==> " + o("a/sub/y.go") + " <==\n     1\tpackage y",
				"==> in.txt <==\n     1\talpha inside",
				"==> " + o("b/x.txt") + " <==\n[error: path " + fmt.Sprintf("%q", o("b/x.txt")) + " is outside the workspace",
			}},
		{name: "read many unapproved", op: "read_many_files", args: map[string]any{"paths": []string{o("a/x.txt"), o("a") + "/*.txt"}},
			want: []string{"[error: path " + fmt.Sprintf("%q", o("a/x.txt")) + " is outside the workspace", "is outside the workspace"},
			not:  []string{"     1\talpha"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runOutside(t, f, tt.op, jsonArgs(t, tt.args), tt.outside...)
			if tt.denied {
				wantErr(t, err, errdefs.ErrDenied, "outside the workspace")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result does not contain %q:\n%s", w, res.Text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("result contains %q:\n%s", n, res.Text)
				}
			}
			if tt.path != "" && res.Structured["path"] != tt.path {
				t.Errorf("structured path = %v, want %q", res.Structured["path"], tt.path)
			}
		})
	}
	t.Run("read many denied item", func(t *testing.T) {
		res, err := runOutside(t, f, "read_many_files", jsonArgs(t, map[string]any{"paths": []string{o("b/x.txt")}}), o("a"))
		if err != nil {
			t.Fatal(err)
		}
		files, _ := res.Structured["files"].([]map[string]any)
		if len(files) != 1 || files[0]["denied"] != true {
			t.Errorf("files = %v", res.Structured["files"])
		}
	})
	t.Run("structured paths absolute", func(t *testing.T) {
		res, err := runOutside(t, f, "list_dir", jsonArgs(t, map[string]any{"path": o("a"), "depth": 2}), o("a"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range res.Structured["entries"].([]map[string]any) {
			got = append(got, e["path"].(string))
		}
		want := []string{o("a/sub"), o("a/sub/y.go"), o("a/.gitignore"), o("a/x.txt")}
		if !slices.Equal(got, want) {
			t.Errorf("entries = %q, want %q", got, want)
		}
		res, err = runOutside(t, f, "glob", jsonArgs(t, map[string]any{"pattern": "**/*.go", "path": o("a")}), o("a"))
		if err != nil {
			t.Fatal(err)
		}
		if m := res.Structured["matches"].([]string); !slices.Equal(m, []string{o("a/sub/y.go")}) {
			t.Errorf("matches = %q", m)
		}
	})
}

// TestReadOutsideRoot walks the file system root when policy allowed all of
// it: names stay absolute, without a doubled slash.
func TestReadOutsideRoot(t *testing.T) {
	f, _ := newTool(t, tools.Limits{}, nil)
	res, err := runOutside(t, f, "list_dir", `{"path":"/"}`, "/")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range res.Structured["entries"].([]map[string]any) {
		p := e["path"].(string)
		if strings.HasPrefix(p, "//") || !strings.HasPrefix(p, "/") {
			t.Errorf("entry path %q", p)
		}
		found = found || p == "/tmp"
	}
	if !found {
		t.Errorf("/tmp not listed:\n%s", res.Text)
	}
}

// TestSensitiveWithheldOutside checks that Options.Sensitive filters walks of an
// approved directory outside the workspace as it does inside.
func TestSensitiveWithheldOutside(t *testing.T) {
	out := outsideDir(t)
	writeTree(t, out, map[string]string{
		"a/.env":            "API_KEY=sk-123\n",
		"a/secrets/key.pem": "sk-456\n",
		"a/main.go":         "// sk-000 is a fake key\n",
	})
	a := filepath.Join(out, "a")
	f, _, asked := newSensitiveTool(t, nil)
	tests := []struct {
		op, args string
		want     []string
		not      []string
	}{
		{"list_dir", `{"path":P,"depth":3}`, []string{"main.go", "(2 sensitive entries withheld by policy.)"}, []string{".env", "secrets", "key.pem"}},
		{"grep_search", `{"pattern":"sk-","path":P}`, []string{"main.go:1:", "withheld"}, []string{"sk-123", "sk-456"}},
		{"glob", `{"pattern":"**/*","path":P}`, []string{"main.go", "withheld"}, []string{"key.pem"}},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			res, err := runOutside(t, f, tt.op, withPath(t, tt.args, a), a)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result does not contain %q:\n%s", w, res.Text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("result contains %q:\n%s", n, res.Text)
				}
			}
		})
	}
	for _, p := range asked() {
		if p != a && !strings.HasPrefix(p, a+"/") {
			t.Errorf("Sensitive was asked about %q, not an absolute path in %s", p, a)
		}
	}
}

// TestReadSwappedAfterCheck swaps a component of an approved outside path
// for a symlink to an unapproved directory after the path was resolved and
// checked: the read must be refused, not follow it.
func TestReadSwappedAfterCheck(t *testing.T) {
	calls := []struct{ op, args string }{
		{"read_file", `{"path":P}`},
		{"list_dir", `{"path":P}`},
		{"glob", `{"pattern":"**/*","path":P}`},
		{"grep_search", `{"pattern":"secret","path":P}`},
	}
	// swap replaces dir/name with a symlink to target.
	swap := func(t *testing.T, dir, name, target string) {
		t.Helper()
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".orig")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// path is the path read, allowed the path approved; swapped says
		// what is swapped for a symlink into other: "d" (a directory
		// above the path) or "last" (the path itself).
		path, allowed func(out string) string
		swapped       string
		files         bool // the calls read a file, not a directory
	}{
		{name: "directory above", swapped: "d", files: true,
			path:    func(out string) string { return filepath.Join(out, "d", "f.txt") },
			allowed: func(out string) string { return filepath.Join(out, "d") }},
		{name: "directory itself", swapped: "last",
			path:    func(out string) string { return filepath.Join(out, "d") },
			allowed: func(out string) string { return filepath.Join(out, "d") }},
		{name: "directory above, through a workspace symlink", swapped: "d", files: true,
			path:    func(string) string { return "lnk/d/f.txt" },
			allowed: func(out string) string { return filepath.Join(out, "d") }},
	}
	for _, tt := range tests {
		for _, c := range calls {
			if tt.files && (c.op == "list_dir" || c.op == "glob") {
				continue
			}
			t.Run(tt.name+"/"+c.op, func(t *testing.T) {
				out, other := outsideDir(t), outsideDir(t)
				writeTree(t, out, map[string]string{"d/f.txt": "approved\n"})
				writeTree(t, other, map[string]string{"d/f.txt": "other secret\n"})
				f, _ := newTool(t, tools.Limits{}, map[string]string{"lnk": "->" + out})
				f.readLocated = func(loc workspace.Location) {
					f.readLocated = nil
					swap(t, out, "d", filepath.Join(other, "d"))
				}
				defer func() { f.readLocated = nil }()
				res, err := runOutside(t, f, c.op, withPath(t, c.args, tt.path(out)), tt.allowed(out))
				if err == nil {
					t.Fatalf("the read went through a swapped symlink: %q", res.Text)
				}
				wantErr(t, err, errdefs.ErrDenied, "changed while it was being read")
			})
		}
	}
	for _, c := range []struct{ op, args string }{
		{"read_file", `{"path":P}`},
		{"grep_search", `{"pattern":"secret","path":P}`},
	} {
		t.Run("file itself/"+c.op, func(t *testing.T) {
			out, other := outsideDir(t), outsideDir(t)
			writeTree(t, out, map[string]string{"d/f.txt": "approved\n"})
			writeTree(t, other, map[string]string{"d/f.txt": "other secret\n"})
			f, _ := newTool(t, tools.Limits{}, nil)
			f.readLocated = func(workspace.Location) {
				f.readLocated = nil
				swap(t, filepath.Join(out, "d"), "f.txt", filepath.Join(other, "d/f.txt"))
			}
			defer func() { f.readLocated = nil }()
			p := filepath.Join(out, "d/f.txt")
			_, err := runOutside(t, f, c.op, withPath(t, c.args, p), p)
			wantErr(t, err, errdefs.ErrDenied, "changed while it was being read")
		})
	}
}
