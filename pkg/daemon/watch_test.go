package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// WorkspaceService.Watch through a real daemon: creating, changing,
// renaming and removing files under the watched path are reported, merged
// per path; a directory created later is watched too; what .gitignore
// ignores is not reported; a path outside the workspace is refused; a
// client without access is refused; canceling ends the stream.
func TestWatchWorkspace(t *testing.T) {
	d := daemontest.Start(t)
	ws := d.Workspace
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "*.log\nbuild/\n")
	write("src/keep.go", "package src\n")
	if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := pb.NewWorkspaceServiceClient(d.Conn)

	// Refusals: outside the workspace, and without access.
	for _, p := range []string{t.TempDir(), "../", "/etc"} {
		st, err := cl.Watch(d.AsOperator(ctx), &pb.WatchRequest{Path: p, Recursive: true})
		if err == nil {
			_, err = st.Recv()
		}
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "outside the workspace") {
			t.Fatalf("watch %s: %v, want PERMISSION_DENIED outside the workspace", p, err)
		}
	}
	if st, err := cl.Watch(ctx, &pb.WatchRequest{}); err == nil {
		if _, err = st.Recv(); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("watch without the operator credential: %v", err)
		}
	}
	if st, err := cl.Watch(d.AsOperator(ctx), &pb.WatchRequest{Path: "nope"}); err == nil {
		if _, err = st.Recv(); status.Code(err) != codes.NotFound {
			t.Fatalf("watch of a missing directory: %v", err)
		}
	}

	wctx, stop := context.WithCancel(d.AsOperator(ctx))
	defer stop()
	st, err := cl.Watch(wctx, &pb.WatchRequest{Recursive: true, CoalesceMs: 50})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil || first.GetStarted().GetPath() != "." || first.GetStarted().GetDirectories() != 2 {
		t.Fatalf("started: %v %v (want . with 2 directories: the root and src, not build)", first, err)
	}
	var seen []*pb.FileChange
	// next waits for a change of path of kind; every change seen is kept.
	next := func(path string, kind pb.FileChangeKind) {
		t.Helper()
		for _, c := range seen {
			if c.GetPath() == path && c.GetKind() == kind {
				return
			}
		}
		for {
			r, err := st.Recv()
			if err != nil {
				t.Fatalf("waiting for %s %v: %v (seen %v)", path, kind, err, seen)
			}
			seen = append(seen, r.GetChanges()...)
			for _, c := range r.GetChanges() {
				if c.GetPath() == path && c.GetKind() == kind {
					return
				}
			}
		}
	}
	write("src/a.go", "package src\n")
	write("debug.log", "ignored\n")
	write("build/out.bin", "ignored\n")
	next("src/a.go", pb.FileChangeKind_FILE_CHANGE_KIND_CREATED)
	f, err := os.OpenFile(filepath.Join(ws, "src/a.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("// more\n")
	f.Close()
	next("src/a.go", pb.FileChangeKind_FILE_CHANGE_KIND_CHANGED)
	// A new directory tree: its files are reported, and it is watched.
	write("pkg/sub/b.go", "package sub\n")
	next("pkg/sub/b.go", pb.FileChangeKind_FILE_CHANGE_KIND_CREATED)
	write("pkg/sub/c.go", "package sub\n")
	next("pkg/sub/c.go", pb.FileChangeKind_FILE_CHANGE_KIND_CREATED)
	// A rename is the old path removed and the new one created.
	if err := os.Rename(filepath.Join(ws, "src/a.go"), filepath.Join(ws, "src/renamed.go")); err != nil {
		t.Fatal(err)
	}
	next("src/a.go", pb.FileChangeKind_FILE_CHANGE_KIND_REMOVED)
	next("src/renamed.go", pb.FileChangeKind_FILE_CHANGE_KIND_CREATED)
	if err := os.Remove(filepath.Join(ws, "src/renamed.go")); err != nil {
		t.Fatal(err)
	}
	next("src/renamed.go", pb.FileChangeKind_FILE_CHANGE_KIND_REMOVED)
	for _, c := range seen {
		if strings.HasSuffix(c.GetPath(), ".log") || strings.HasPrefix(c.GetPath(), "build") {
			t.Fatalf("an ignored path was reported: %v", c)
		}
	}
	// Ending the stream ends the watch.
	stop()
	if _, err := st.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
}

// A symlink in the workspace to a directory outside: watching through it is
// refused, and a recursive watch of the workspace does not follow it — a
// file created outside is never reported. Shutting toold down ends the
// watch with OK.
func TestWatchDoesNotLeaveTheWorkspace(t *testing.T) {
	d := daemontest.Start(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(d.Workspace, "escape")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := pb.NewWorkspaceServiceClient(d.Conn)
	if st, err := cl.Watch(d.AsOperator(ctx), &pb.WatchRequest{Path: "escape"}); err == nil {
		if _, err = st.Recv(); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("watch through a symlink to outside: %v", err)
		}
	}
	st, err := cl.Watch(d.AsOperator(ctx), &pb.WatchRequest{Recursive: true, CoalesceMs: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || r.GetStarted().GetDirectories() != 1 {
		t.Fatalf("started: %v %v (want the workspace alone)", r, err)
	}
	if err := os.WriteFile(filepath.Join(outside, "canary"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Workspace, "marker"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.GetChanges() {
			if strings.Contains(c.GetPath(), "canary") {
				t.Fatalf("a file outside the workspace was reported: %v", c)
			}
			done = done || c.GetPath() == "marker"
		}
	}
	if err := d.Main.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("after toold closed: %v, want EOF", err)
	}
}
