package fileops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
	"golang.org/x/sys/unix"
)

// TestAttackReadFileJudgedSwap attacks read_file's use of the location
// policy judged (tools.Call.Judged): the real policy engine judges the
// read, then, between that decision and the tool's run, the path is
// changed, and the tool runs with the decision's Judged as the executor
// passes it. What the call reads must be the object policy judged or
// nothing: no canary reaches a result, every refusal is a typed error, and
// a path that changed is refused, not followed — even to a harmless file,
// which a fresh resolution would read (so the reuse is what is tested).
func TestAttackReadFileJudgedSwap(t *testing.T) {
	link := func(target, name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			t.Helper()
			p := filepath.Join(dir, name)
			must(t, os.Rename(p, p+".orig"))
			must(t, os.Symlink(target, p))
		}
	}
	tests := []struct {
		name, path string
		// swap changes the workspace dir between decision and run.
		swap func(t *testing.T, dir string)
		// class is the refusal wanted (nil: the read succeeds with want);
		// fresh, when set, is what a fresh resolution reads instead.
		class       error
		msg         string
		want, fresh string
		// either: the read may also be refused (ErrDenied).
		either bool
	}{
		{name: "unchanged", path: "a.txt", want: "harmless a"},
		{name: "unchanged below", path: "sub/b.txt", want: "harmless b"},
		{name: "file swapped for a symlink to .env", path: "a.txt", swap: link(".env", "a.txt"),
			class: errdefs.ErrDenied, msg: "changed while it was being read"},
		{name: "file swapped for a symlink to a harmless file", path: "a.txt", swap: link("plain/f", "a.txt"),
			class: errdefs.ErrDenied, msg: "changed while it was being read", fresh: "harmless\n"},
		{name: "file swapped for a symlink outside", path: "a.txt", swap: func(t *testing.T, dir string) {
			link(filepath.Join(filepath.Dir(dir), "outside", "a.txt"), "a.txt")(t, dir)
		}, class: errdefs.ErrDenied, msg: "changed while it was being read"},
		{name: "directory swapped for a symlink outside", path: "sub/b.txt", swap: func(t *testing.T, dir string) {
			link(filepath.Join(filepath.Dir(dir), "outside", "sub"), "sub")(t, dir)
		}, class: errdefs.ErrDenied, msg: "changed while it was being read"},
		{name: "directory swapped for a symlink inside", path: "sub/b.txt", swap: link("other", "sub"),
			class: errdefs.ErrDenied, msg: "changed while it was being read", fresh: "harmless other"},
		{name: "file replaced by a hard link to .env", path: "a.txt", swap: func(t *testing.T, dir string) {
			must(t, os.Link(dir+"/.env", dir+"/a.txt.new"))
			must(t, os.Rename(dir+"/a.txt.new", dir+"/a.txt"))
		}, class: errdefs.ErrDenied, msg: "sensitive"},
		{name: "file removed", path: "a.txt", swap: func(t *testing.T, dir string) {
			must(t, os.Remove(dir+"/a.txt"))
		}, class: errdefs.ErrFailed, msg: "does not exist"},
		{name: "workspace renamed and replaced by a symlink outside", path: "a.txt", swap: func(t *testing.T, dir string) {
			must(t, os.Rename(dir, dir+".moved"))
			must(t, os.Symlink(filepath.Join(filepath.Dir(dir), "outside"), dir))
			t.Cleanup(func() {
				os.Remove(dir)
				os.Rename(dir+".moved", dir)
			})
		}, want: "harmless a", either: true}, // the workspace's own file, through its descriptor, or nothing
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, e, dir := judgedTool(t)
			writeTree(t, dir, map[string]string{"a.txt": "harmless a", "sub/b.txt": "harmless b", "other/b.txt": "harmless other"})
			writeTree(t, filepath.Join(filepath.Dir(dir), "outside"), map[string]string{
				"a.txt": "OUTSIDE-CANARY\n", "sub/b.txt": "OUTSIDE-CANARY\n"})
			v, err := e.Authorize(context.Background(), &authz.Request{ConversationID: "c", Mode: authz.ModeAuto,
				Tool: ToolName, Operation: "read_file", Risk: tools.RiskLow,
				Effect: tools.Effect{Reads: []string{tt.path}}})
			if err != nil || v.Decision != authz.Allow {
				t.Fatalf("decision %v, %v", v.Decision, err)
			}
			if len(v.Judged) != 1 || v.Judged[0].Given != tt.path {
				t.Fatalf("Judged %+v, want %s", v.Judged, tt.path)
			}
			if tt.swap != nil {
				tt.swap(t, dir)
			}
			call := func(judged []tools.JudgedPath) (*tools.Result, error) {
				return f.Run(context.Background(), &tools.Call{ID: "c1", Tool: ToolName, Operation: "read_file",
					Args: map[string]any{"path": tt.path}, Outside: v.Outside, Judged: judged}, nil)
			}
			res, err := call(v.Judged)
			checkNoCanary(t, tt.path, res, err)
			if tt.either && errors.Is(err, errdefs.ErrDenied) {
				return
			}
			if tt.class == nil {
				if err != nil {
					t.Fatalf("read refused: %v", err)
				}
				if !strings.Contains(res.Text, tt.want) {
					t.Errorf("read %q, want %q", res.Text, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %q after the path changed, want %v", res.Text, tt.class)
			}
			wantErr(t, err, tt.class, tt.msg)
			if tt.fresh != "" {
				// Without the decision's location the tool resolves the
				// path again and reads where it leads now.
				res, err := call(nil)
				if err != nil || !strings.Contains(res.Text, tt.fresh) {
					t.Errorf("a fresh resolution read %v, %v; want %q", res, err, tt.fresh)
				}
			}
		})
	}
}

// TestReadFileJudgedKeyed checks that a judged location is used only for
// the path it was judged for, in the workspace it was judged in: any other
// entry is ignored and the path resolved as without one.
func TestReadFileJudgedKeyed(t *testing.T) {
	f, _, dir := judgedTool(t)
	writeTree(t, dir, map[string]string{"a.txt": "harmless a"})
	must(t, os.Symlink("a.txt", dir+"/lnk"))
	for _, j := range []tools.JudgedPath{
		{Given: "lnk", Abs: dir + "/lnk"},           // judged plain, a symlink now
		{Given: "other", Abs: dir + "/lnk"},         // another path's
		{Given: "lnk", Abs: dir + ".elsewhere/lnk"}, // another workspace's
		{Given: "lnk", Abs: "/lnk"},                 // not where lnk names
	} {
		res, err := f.Run(context.Background(), &tools.Call{ID: "c1", Tool: ToolName, Operation: "read_file",
			Args: map[string]any{"path": "lnk"}, Judged: []tools.JudgedPath{j}}, nil)
		switch {
		case j.Given == "lnk" && j.Abs == dir+"/lnk":
			// Judged plain, now a symlink: refused.
			wantErr(t, err, errdefs.ErrDenied, "changed while it was being read")
		case err != nil:
			t.Errorf("%+v: %v", j, err)
		case !strings.Contains(res.Text, "harmless a"):
			t.Errorf("%+v: read %q", j, res.Text)
		}
	}
}

// judgedTool is guardedTool that also returns its policy engine.
func judgedTool(t *testing.T) (*FileOperations, *authz.Engine, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	dir, home := base+"/ws", base+"/home"
	writeTree(t, dir, map[string]string{".env": "ENV-CANARY\n", "plain/f": "harmless\n"})
	writeTree(t, home, map[string]string{".ssh/id_rsa": "SSH-CANARY\n"})
	ws, err := workspace.Open(dir)
	must(t, err)
	t.Cleanup(func() { ws.Close() })
	e, err := authz.NewEngine(authz.EngineConfig{Workspace: ws, Home: home})
	must(t, err)
	return New(ws, tools.Limits{}, Options{Sensitive: e.Sensitive, Guard: e}), e, dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadFileJudgedSpecialNotOpened: a FIFO that policy judged plain is
// refused by the type policy found (tools.JudgedPath.Type) before it is
// opened, as one the tool resolves itself is (TestSpecialFilesNotOpened).
func TestReadFileJudgedSpecialNotOpened(t *testing.T) {
	f, e, dir := judgedTool(t)
	p := filepath.Join(dir, "pipe")
	must(t, unix.Mkfifo(p, 0o644))
	v, err := e.Authorize(context.Background(), &authz.Request{ConversationID: "c", Mode: authz.ModeAuto,
		Tool: ToolName, Operation: "read_file", Risk: tools.RiskLow, Effect: tools.Effect{Reads: []string{"pipe"}}})
	if err != nil || v.Decision != authz.Allow {
		t.Fatalf("decision %v, %v", v.Decision, err)
	}
	if len(v.Judged) != 1 || v.Judged[0].Type != unix.S_IFIFO {
		t.Fatalf("Judged %+v, want the FIFO with its type", v.Judged)
	}
	w := newOpenWatch(t, dir)
	_, err = f.Run(context.Background(), &tools.Call{ID: "c1", Tool: ToolName, Operation: "read_file",
		Args: map[string]any{"path": "pipe"}, Judged: v.Judged}, nil)
	if n := w.opensWith(t, p, func() {}); n > 0 {
		t.Error("read_file opened the judged FIFO")
	}
	wantErr(t, err, errdefs.ErrFailed, "not a regular file")
}
