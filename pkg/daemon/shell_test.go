package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// pathWith returns a directory for PATH holding links to the named
// programs of the host (none: an image without a userland).
func pathWith(t *testing.T, progs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range progs {
		src, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("the test needs %s: %v", p, err)
		}
		if err := os.Symlink(src, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// toold starts where its shell is missing (a container image without a
// userland): it offers every other tool, lists terminal_operations as
// unavailable with the reason, and a call to it ends UNAVAILABLE. Where
// only sh is installed, commands run with sh, and a line that is not POSIX
// sh syntax is refused before it runs (policy judges lines as bash).
func TestStartsWithoutShell(t *testing.T) {
	tests := []struct {
		name     string
		path     []string // programs on PATH
		shell    string   // terminal.shell
		off      string   // reason terminal_operations is off, "" when on
		describe string   // in run_command's description when on
	}{
		{name: "no shell", off: "neither bash nor sh is on PATH"},
		{name: "configured shell missing", path: []string{"sh", "bash"}, shell: "no-such-shell", off: `terminal.shell "no-such-shell"`},
		{name: "sh only", path: []string{"sh"}, describe: "POSIX sh syntax only"},
		{name: "bash", path: []string{"bash", "sh"}, describe: "with bash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", pathWith(t, tt.path...))
			d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
				c.ApprovalMode = "yolo"
				c.Terminal.Shell = tt.shell
			}))
			os.WriteFile(filepath.Join(d.Workspace, "a.txt"), []byte("hello\n"), 0o644)
			resp, err := d.Client.ListTools(context.Background(), &pb.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			var term *pb.ToolSpec
			for _, ts := range resp.GetTools() {
				names = append(names, ts.GetName())
				if ts.GetName() == "terminal_operations" {
					term = ts
				}
			}
			x := newSession(t, d)
			if r, _ := x.call("read", "read_file", `{"path":"a.txt"}`); !r.GetSuccess() || !strings.Contains(text(r), "hello") {
				t.Fatalf("read_file: %v", r)
			}
			if tt.off != "" {
				if term != nil {
					t.Fatalf("terminal_operations offered without a shell: %v", names)
				}
				// terminal_operations, then web_search (no search provider
				// in the test daemon).
				un := resp.GetUnavailable()
				if len(un) != 2 || un[1].GetName() != "web_search" || un[0].GetName() != "terminal_operations" || !strings.Contains(un[0].GetReason(), tt.off) || len(un[0].GetOperations()) == 0 {
					t.Fatalf("unavailable = %v, want terminal_operations: %q", un, tt.off)
				}
				for i, name := range []string{"run_command", "terminal_operations.run_command", "terminal_operations", "create_session"} {
					r, _ := x.call(string(rune('a'+i)), name, `{"operation":"run_command","command":"true"}`)
					if r.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_UNAVAILABLE || !strings.Contains(r.GetError().GetMessage(), tt.off) {
						t.Fatalf("%s: %v, want UNAVAILABLE saying %q", name, r.GetError(), tt.off)
					}
				}
				if r, _ := x.call("z", "run_comand", `{}`); r.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_TOOL_NOT_FOUND {
					t.Fatalf("a misspelled name: %v, want TOOL_NOT_FOUND", r.GetError())
				}
				// TerminalService: no sessions, and a new one is UNAVAILABLE.
				tc := pb.NewTerminalServiceClient(d.Conn)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if ls, err := tc.ListSessions(d.AsOperator(ctx), &pb.ListSessionsRequest{}); err != nil || len(ls.GetSessions()) != 0 {
					t.Fatalf("ListSessions: %v %v", ls, err)
				}
				at, err := tc.Attach(ctx)
				if err != nil {
					t.Fatal(err)
				}
				at.Send(&pb.AttachRequest{Msg: &pb.AttachRequest_Open{Open: &pb.AttachOpen{Target: &pb.AttachOpen_NewSession{NewSession: &pb.NewSession{}}}}})
				if _, err := at.Recv(); status.Code(err) != codes.Unavailable {
					t.Fatalf("Attach to a new session: %v, want Unavailable", err)
				}
				return
			}
			if un := resp.GetUnavailable(); term == nil || len(un) != 1 || un[0].GetName() != "web_search" {
				t.Fatalf("terminal_operations not offered: %v, unavailable %v", names, resp.GetUnavailable())
			}
			var desc string
			for _, op := range term.GetOperations() {
				if op.GetName() == "run_command" {
					desc = op.GetDescription() + op.GetInputSchema()
				}
			}
			if !strings.Contains(desc, tt.describe) {
				t.Fatalf("run_command says %q, want %q", desc, tt.describe)
			}
			r, _ := x.call("echo", "run_command", `{"command":"echo one && echo two > out.txt; read x < out.txt; echo \"got $x\""}`)
			if !r.GetSuccess() || !strings.Contains(text(r), "one") || !strings.Contains(text(r), "got two") {
				t.Fatalf("run_command: %v", r)
			}
			// bash-only syntax: refused under sh before anything runs; bash runs it.
			r, _ = x.call("bashism", "run_command", `{"command":"a=(yes); echo ${a[0]} > bashism.txt"}`)
			_, statErr := os.Stat(filepath.Join(d.Workspace, "bashism.txt"))
			if tt.describe == "POSIX sh syntax only" {
				if r.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS || r.GetError().GetField() != "/command" || statErr == nil {
					t.Fatalf("bash-only line under sh: %v (file: %v), want INVALID_ARGUMENTS on /command and nothing run", r, statErr)
				}
			} else if !r.GetSuccess() || statErr != nil {
				t.Fatalf("bash-only line under bash: %v (file: %v)", r, statErr)
			}
		})
	}
}
