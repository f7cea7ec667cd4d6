package fileops

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// outsideDir makes a directory outside any workspace, with a file in it,
// and returns its resolved path.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"secret.txt": "root:secret\n", "d/": ""})
	return dir
}

// writeCalls are the calls of every write operation on the path P.
var writeCalls = []struct{ op, args string }{
	{"write_file", `{"path":P,"content":"pwned"}`},
	{"create_file", `{"path":P,"content":"pwned"}`},
	{"edit_file", `{"path":P,"old_string":"root:secret","new_string":"pwned"}`},
	{"replace_string", `{"path":P,"old_string":"root:secret","new_string":"pwned"}`},
	{"edit_file", `{"path":P,"old_string":"","new_string":"pwned"}`},
	{"delete_path", `{"path":P,"recursive":true}`},
	{"move_path", `{"source":P,"destination":"moved"}`},
	{"move_path", `{"source":"sub/a.txt","destination":P,"overwrite":true}`},
	{"make_dir", `{"path":P}`},
}

func withPath(t *testing.T, args, p string) string {
	t.Helper()
	q, _ := json.Marshal(p)
	return strings.ReplaceAll(args, "P", string(q))
}

// TestWriteEscapesRefused checks that no write operation changes anything
// outside the workspace, whatever the path looks like, when policy did not
// allow it.
func TestWriteEscapesRefused(t *testing.T) {
	outside := outsideDir(t)
	f, dir := newTool(t, tools.Limits{}, map[string]string{
		"sub/a.txt":     "inside\n",
		"up":            "->..",
		"out":           "->" + outside,
		"relout":        "->" + relTo(t, outside),
		"sub/secretlnk": "->" + filepath.Join(outside, "secret.txt"),
	})
	// Paths whose directory is outside: refused for every operation.
	paths := []string{
		"../x", "../secret.txt", filepath.Join(outside, "secret.txt"), filepath.Join(outside, "new.txt"),
		"out/secret.txt", "out/new.txt", "out/d/x", "relout/secret.txt", "sub/../../x", "up/x", "up/" + filepath.Base(dir) + "x",
	}
	// Paths whose last component is a symlink to outside: refused by the
	// operations that follow it; delete_path and move_path act on the link.
	followed := []string{"sub/secretlnk", "out", "relout", outside}
	for _, p := range append(paths, followed...) {
		for _, c := range writeCalls {
			onLink := slicesContains(followed, p) && p != outside && (c.op == "delete_path" || c.op == "move_path")
			if onLink {
				continue // TestWriteSymlinkItself
			}
			t.Run(c.op+"/"+p, func(t *testing.T) {
				out, in := snapshot(t, outside), snapshot(t, dir)
				res, err := run(t, f, c.op, withPath(t, c.args, p))
				if err == nil {
					t.Fatalf("got a result, want ErrDenied: %q", res.Text)
				}
				if !errors.Is(err, errdefs.ErrDenied) {
					t.Fatalf("error %q is not ErrDenied", err)
				}
				sameSnapshot(t, outside, out)
				sameSnapshot(t, dir, in)
			})
		}
	}
}

func slicesContains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

// relTo returns a path to target relative to a workspace directory made by
// newTool (a direct child of a temporary directory).
func relTo(t *testing.T, target string) string {
	t.Helper()
	return "../../../../../../../../.." + target
}

// TestWriteSymlinkItself checks that delete_path and move_path act on a
// symlink that points outside, not on what it points to.
func TestWriteSymlinkItself(t *testing.T) {
	outside := outsideDir(t)
	f, dir := newTool(t, tools.Limits{}, map[string]string{
		"lnk": "->" + filepath.Join(outside, "secret.txt"),
		"out": "->" + outside,
	})
	before := snapshot(t, outside)
	mustRun(t, f, "move_path", `{"source":"lnk","destination":"moved"}`)
	if target, err := os.Readlink(filepath.Join(dir, "moved")); err != nil || target != filepath.Join(outside, "secret.txt") {
		t.Errorf("moved is not the link: %q %v", target, err)
	}
	mustRun(t, f, "delete_path", `{"path":"moved"}`)
	mustRun(t, f, "delete_path", `{"path":"out","recursive":true}`)
	sameSnapshot(t, outside, before)
	if _, err := os.Lstat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Error("the link out is still there")
	}
}

// TestWriteOutsideAllowed writes outside the workspace where the call's
// policy verdict allowed it, and only there.
func TestWriteOutsideAllowed(t *testing.T) {
	outside := outsideDir(t)
	f, dir := newTool(t, tools.Limits{}, map[string]string{"in.txt": "in\n"})
	o := func(p string) string { return filepath.Join(outside, p) }

	res, err := runOutside(t, f, "write_file", jsonArgs(t, map[string]any{"path": o("new/deep/f.txt"), "content": "hi\n"}), outside)
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, o("new/deep/f.txt")) != "hi\n" {
		t.Error("not written")
	}
	if !strings.Contains(res.Text, "Created "+o("new/deep/f.txt")) || !strings.Contains(res.Text, o("new")+", "+o("new/deep")) {
		t.Errorf("text = %q", res.Text)
	}
	if _, err := runOutside(t, f, "edit_file", jsonArgs(t, map[string]any{"path": o("secret.txt"), "old_string": "secret", "new_string": "public"}), o("secret.txt")); err != nil {
		t.Fatal(err)
	}
	if readFile(t, o("secret.txt")) != "root:public\n" {
		t.Error("not edited")
	}
	if _, err := runOutside(t, f, "create_file", jsonArgs(t, map[string]any{"path": o("c.txt"), "content": "c"}), outside); err != nil {
		t.Fatal(err)
	}
	if _, err := runOutside(t, f, "make_dir", jsonArgs(t, map[string]any{"path": o("m/n")}), outside); err != nil {
		t.Fatal(err)
	}
	// Moves between the workspace and outside.
	if _, err := runOutside(t, f, "move_path", jsonArgs(t, map[string]any{"source": "in.txt", "destination": o("m/n/in.txt")}), outside); err != nil {
		t.Fatal(err)
	}
	if readFile(t, o("m/n/in.txt")) != "in\n" {
		t.Error("not moved out")
	}
	if _, err := runOutside(t, f, "move_path", jsonArgs(t, map[string]any{"source": o("c.txt"), "destination": "back/c.txt"}), outside); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dir, "back/c.txt")) != "c" {
		t.Error("not moved in")
	}
	if _, err := runOutside(t, f, "delete_path", jsonArgs(t, map[string]any{"path": o("new"), "recursive": true}), outside); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(o("new")); !os.IsNotExist(err) {
		t.Error("not deleted")
	}

	// Allowed is one path, not its neighbours.
	before := snapshot(t, outside)
	_, err = runOutside(t, f, "write_file", jsonArgs(t, map[string]any{"path": o("other.txt"), "content": "x"}), o("allowed.txt"))
	wantErr(t, err, errdefs.ErrDenied, "outside the workspace")
	_, err = runOutside(t, f, "write_file", jsonArgs(t, map[string]any{"path": o("allowed.txt.bak"), "content": "x"}), o("allowed.txt"))
	wantErr(t, err, errdefs.ErrDenied)
	sameSnapshot(t, outside, before)
}

// TestMoveAcrossFileSystems moves a file between the workspace and a
// directory on another file system (/dev/shm, when it is one): a copy and
// a delete.
func TestMoveAcrossFileSystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "toold-test-")
	if err != nil {
		t.Skipf("no /dev/shm to move across file systems: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	shm, _ = filepath.EvalSymlinks(shm)
	f, dir := newTool(t, tools.Limits{}, map[string]string{"a.txt": "across\n", "tree/x": "x"})
	var a, b syscall.Stat_t
	syscall.Stat(dir, &a)
	syscall.Stat(shm, &b)
	if a.Dev == b.Dev {
		t.Skip("/dev/shm is on the same file system as the temporary directory")
	}
	os.Chmod(filepath.Join(dir, "a.txt"), 0o640)
	res, err := runOutside(t, f, "move_path", jsonArgs(t, map[string]any{"source": "a.txt", "destination": filepath.Join(shm, "a.txt")}), shm)
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(shm, "a.txt")) != "across\n" || res.Structured["copied"] != true {
		t.Errorf("not copied: %q", res.Text)
	}
	if modeOf(t, filepath.Join(shm, "a.txt")).Perm() != 0o640 {
		t.Error("mode not kept")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Error("the source is still there")
	}
	_, err = runOutside(t, f, "move_path", jsonArgs(t, map[string]any{"source": "tree", "destination": filepath.Join(shm, "tree")}), shm)
	wantErr(t, err, errdefs.ErrFailed, "different file systems", "moves only files")
	noTemps(t, shm)
}

// TestSymlinkSwappedAfterCheck swaps a directory, or the file itself, for
// a symlink to outside after the path was checked: the write must not
// follow it.
func TestSymlinkSwappedAfterCheck(t *testing.T) {
	for _, c := range writeCalls {
		if c.op == "move_path" && strings.Contains(c.args, `"source":"sub/a.txt"`) {
			continue
		}
		t.Run("dir/"+c.op, func(t *testing.T) {
			outside := outsideDir(t)
			writeTree(t, outside, map[string]string{"f.txt": "root:secret\n"})
			f, dir := newTool(t, tools.Limits{}, map[string]string{"sub/f.txt": "root:secret\n", "sub/a.txt": "a"})
			f.locks.held = func([]string) {
				f.locks.held = nil
				if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub.orig")); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
					t.Error(err)
				}
			}
			defer func() { f.locks.held = nil }()
			before := snapshot(t, outside)
			_, err := run(t, f, c.op, withPath(t, c.args, "sub/f.txt"))
			if err == nil {
				t.Fatal("the write went through a swapped symlink")
			}
			// The directory is opened one component at a time without
			// following a symlink: the swap is refused as a swap.
			wantErr(t, err, errdefs.ErrDenied, "replaced by a symlink after the path was checked")
			sameSnapshot(t, outside, before)
		})
	}
	for _, op := range []string{"write_file", "edit_file", "create_file"} {
		t.Run("file/"+op, func(t *testing.T) {
			outside := outsideDir(t)
			f, dir := newTool(t, tools.Limits{}, map[string]string{"f.txt": "root:secret\n"})
			f.locks.held = func([]string) {
				f.locks.held = nil
				os.Remove(filepath.Join(dir, "f.txt"))
				if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "f.txt")); err != nil {
					t.Error(err)
				}
			}
			defer func() { f.locks.held = nil }()
			before := snapshot(t, outside)
			_, err := run(t, f, op, argsFor(op))
			if op == "create_file" {
				wantErr(t, err, errdefs.ErrFailed, "already exists")
			} else {
				wantErr(t, err, errdefs.ErrDenied, "replaced by a symlink after the path was checked")
			}
			sameSnapshot(t, outside, before)
		})
	}
	t.Run("outside dir", func(t *testing.T) {
		outside, other := outsideDir(t), outsideDir(t)
		f, _ := newTool(t, tools.Limits{}, nil)
		f.locks.held = func([]string) {
			f.locks.held = nil
			os.Rename(filepath.Join(outside, "d"), filepath.Join(outside, "d.orig"))
			os.Symlink(filepath.Join(other, "d"), filepath.Join(outside, "d"))
		}
		defer func() { f.locks.held = nil }()
		before := snapshot(t, other)
		_, err := runOutside(t, f, "write_file", jsonArgs(t, map[string]any{"path": filepath.Join(outside, "d/x"), "content": "pwned"}), outside)
		wantErr(t, err, errdefs.ErrDenied, "changed while it was being written")
		sameSnapshot(t, other, before)
	})
}

func argsFor(op string) string {
	switch op {
	case "edit_file":
		return `{"path":"f.txt","old_string":"root:secret","new_string":"pwned"}`
	}
	return `{"path":"f.txt","content":"pwned"}`
}
