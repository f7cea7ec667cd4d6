package main

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// toolctl history --changes shows what each call changed; toolctl rewind
// undoes it (a dry run first), and says so when there is nothing to undo.
func TestRewindCommand(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo"; c.Terminal.Dir = t.TempDir() }))
	runAsOperator(t, d, "call", "write_file", "path=a.txt", "content=one", "--conversation", "dev").check(t, exitOK, nil, nil)
	runAsOperator(t, d, "call", "run_command", "command=echo two > b.txt && rm a.txt", "--conversation", "dev").check(t, exitOK, nil, nil)
	runAsOperator(t, d, "history", "--conversation", "dev", "--changes").check(t, exitOK, []string{"CHANGES", "A a.txt", "D a.txt, A b.txt"}, nil)
	r := runAsOperator(t, d, "history", "--conversation", "dev", "--json")
	var resp pb.QueryHistoryResponse
	if err := protojson.Unmarshal([]byte(r.stdout), &resp); err != nil || len(resp.GetEntries()) != 2 {
		t.Fatalf("history: %v\n%s", err, r.stdout)
	}
	first := resp.GetEntries()[1].GetCallId()
	runAsOperator(t, d, "rewind", "dev", first, "--dry-run").check(t, exitOK, []string{"would undo", "b.txt", "remove", "would restore"}, nil)
	if _, err := os.Stat(filepath.Join(d.Workspace, "b.txt")); err != nil {
		t.Fatal("a dry run changed the workspace")
	}
	runAsOperator(t, d, "rewind", "dev", first).check(t, exitOK, []string{"undid", "restored"}, nil)
	for _, p := range []string{"a.txt", "b.txt"} {
		if _, err := os.Lstat(filepath.Join(d.Workspace, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	runAsOperator(t, d, "rewind", "dev", first).check(t, exitFailure, nil, []string{"no record"})
	runAsOperator(t, d, "rewind", "dev").check(t, exitUsage, nil, nil)
}
