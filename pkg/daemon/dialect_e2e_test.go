package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// Each dialect listed and called end to end through the gRPC stream: the
// agent's names and arguments run on toold's tools under toold's policy
// (ask mode: the person is asked), and the result comes back in the
// agent's shape.
func TestDialectsEndToEnd(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "ask" }))
	ws := d.Workspace
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	type call struct {
		name, args string
		want       []string // substrings of the result text
	}
	cases := []struct {
		dialect string
		listed  []string // tools listed with their agent's names
		off     []string // listed as unavailable
		calls   []call
	}{
		{"claude-code", []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "TodoWrite", "TaskStop"}, []string{"Agent", "NotebookEdit"}, []call{
			{"Bash", `{"command":"echo hi; exit 3","description":"Print hi","timeout":120000}`, []string{"Exit code 3\nhi"}},
			{"Read", `{"file_path":"` + filepath.Join(ws, "main.go") + `"}`, []string{"1\tpackage main\n2\t\n3\tfunc main() {}\n4\t"}},
			{"Write", `{"file_path":"notes.txt","content":"from claude\n"}`, nil},
			{"Grep", `{"pattern":"func","output_mode":"files_with_matches"}`, []string{"Found 1 files\nmain.go"}},
		}},
		{"gemini-cli", []string{"read_file", "run_shell_command", "replace", "grep_search", "web_fetch"}, []string{"activate_skill"}, []call{
			{"run_shell_command", `{"command":"echo gem","description":"say gem"}`, []string{"Output: gem"}},
			{"read_file", `{"file_path":"main.go","start_line":3,"end_line":3}`, []string{"func main() {}"}},
		}},
		{"codex", []string{"exec_command", "write_stdin", "apply_patch"}, []string{"view_image", "tool_search"}, []call{
			{"exec_command", `{"cmd":"echo cx; exit 2","workdir":"."}`, []string{"Process exited with code 2\nOriginal token count: 1\nOutput:\ncx\n"}},
			// An earlier release's tool, not listed, still runs.
			{"shell", `{"command":["bash","-lc","echo cx; exit 2"],"timeout_ms":10000}`, []string{`{"output":"cx\n","metadata":{"exit_code":2,"duration_seconds":`}},
		}},
		{"openhands", []string{"execute_bash", "str_replace_editor", "think"}, []string{"browser", "finish"}, []call{
			{"execute_bash", `{"command":"echo oh","is_input":"false","security_risk":"LOW"}`, []string{"oh\n[The command completed with exit code 0.]"}},
		}},
		{"swe-agent", []string{"bash", "str_replace_editor", "find_file", "search_dir", "open", "goto", "edit"}, []string{"submit"}, []call{
			{"bash", `{"command":"true"}`, []string{"Your command ran successfully and did not produce any output."}},
			{"find_file", `{"file_name":"main.go"}`, []string{`Found 1 matches for "main.go" in .:`, "main.go"}},
			// The open-file window is the stream's conversation's.
			{"open", `{"path":"main.go","line_number":2}`, []string{"[File: main.go (3 lines total)]\n1:package main\n2:\n3:func main() {}"}},
			{"edit", `{"search":"func main() {}","replace":"func main() { println(1) }"}`, []string{"Text replaced. Please review the changes"}},
			{"goto", `{"line_number":3}`, []string{"3:func main() { println(1) }"}},
		}},
	}
	// Tools of the agents' earlier releases: run (codex's shell above), never
	// listed.
	earlier := map[string][]string{"claude-code": {"TaskOutput"}, "codex": {"shell", "shell_command", "update_plan"}, "gemini-cli": {"save_memory"}}
	for _, c := range cases {
		t.Run(c.dialect, func(t *testing.T) {
			resp, err := d.Client.ListTools(ctx, &pb.ListToolsRequest{Dialect: c.dialect, Format: pb.ToolFormat_TOOL_FORMAT_ANTHROPIC})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetDialect() != c.dialect || resp.GetDialectVersion() == "" {
				t.Errorf("dialect %q version %q", resp.GetDialect(), resp.GetDialectVersion())
			}
			var names, off []string
			for _, ts := range resp.GetTools() {
				names = append(names, ts.GetName())
				if !strings.HasPrefix(ts.GetSource(), "dialect:"+c.dialect+" -> ") {
					t.Errorf("%s source %q", ts.GetName(), ts.GetSource())
				}
			}
			for _, u := range resp.GetUnavailable() {
				off = append(off, u.GetName())
				if u.GetReason() == "" {
					t.Errorf("%s unavailable without a reason", u.GetName())
				}
			}
			for _, n := range c.listed {
				if !slices.Contains(names, n) {
					t.Errorf("%s not listed: %v", n, names)
				}
				if !strings.Contains(resp.GetRenderedJson(), `"name":"`+n+`"`) {
					t.Errorf("%s not rendered", n)
				}
			}
			for _, n := range earlier[c.dialect] {
				if slices.Contains(names, n) || slices.Contains(off, n) {
					t.Errorf("%s, an earlier release's tool, is listed", n)
				}
			}
			for _, n := range c.off {
				if !slices.Contains(off, n) || slices.Contains(names, n) {
					t.Errorf("%s should be listed as unavailable only: tools %v, unavailable %v", n, names, off)
				}
			}

			x := newSession(t, d)
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{Dialect: c.dialect, ClientName: "dialect-test"}}})
			for i, cl := range c.calls {
				asked := false
				res, evs := x.call(c.dialect+string(rune('a'+i)), cl.name, cl.args, func(a *pb.RequiresApproval) *pb.ApprovalDecision {
					asked = true
					return approveOnce(a)
				})
				if !asked {
					t.Errorf("%s ran without the policy's question (ask mode)", cl.name)
				}
				if !res.GetSuccess() && len(cl.want) > 0 && !strings.HasPrefix(cl.want[0], "Exit code") {
					t.Fatalf("%s: %v", cl.name, res.GetError())
				}
				text := ""
				if len(res.GetContent()) > 0 {
					text = res.GetContent()[0].GetText()
				}
				for _, w := range cl.want {
					if !strings.Contains(text, w) {
						t.Errorf("%s result lacks %q:\n%s", cl.name, w, text)
					}
				}
				if st := evs[0].GetStart(); st == nil || st.GetRequestedName() != cl.name {
					t.Errorf("%s: first event %v", cl.name, evs[0])
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "from claude\n" {
		t.Errorf("Claude's Write: %q %v", b, err)
	}

	// A dialect tool toold has no counterpart for answers what toold offers.
	x := newSession(t, d)
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{Dialect: "claude-code"}}})
	res, _ := x.call("sub", "Agent", `{"description":"explore","prompt":"find the bug"}`)
	if res.GetSuccess() || !strings.Contains(res.GetError().GetMessage(), "toold runs no sub-agents") {
		t.Errorf("Agent: %v", res.GetError())
	}
	// toold's own names still work in a dialect; a per-call dialect
	// overrides the stream's.
	x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "own", Name: "think", Dialect: "codex", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"ok"}`}}}})
	for {
		ev, err := x.s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetRequiresApproval(); a != nil {
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: approveOnce(a)}})
		}
		if e := ev.GetEnd(); e != nil && ev.GetCallId() == "own" {
			if !e.GetResult().GetSuccess() {
				t.Errorf("think: %v", e.GetResult().GetError())
			}
			break
		}
	}
	// An unknown dialect is a clear error, for the listing and for a call.
	if _, err := d.Client.ListTools(ctx, &pb.ListToolsRequest{Dialect: "cursor"}); err == nil || !strings.Contains(err.Error(), `unknown dialect "cursor"`) {
		t.Errorf("ListTools cursor: %v", err)
	}
	y := newSession(t, d)
	y.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{Dialect: "cursor"}}})
	res, _ = y.call("u", "think", `{"thought":"x"}`, approveOnce)
	if res.GetError().GetCode() != pb.ErrorCode_ERROR_CODE_INVALID_ARGUMENTS {
		t.Errorf("call in an unknown dialect: %v", res.GetError())
	}
}

// hostResults is pkg/tools/dialect/testdata/hosts.json: what the pinned
// Apache-licensed hosts' own tools answered their model (captured by
// pkg/mcpserver/mcphosts TestHostDialects, which also compares them live,
// Claude Code's included).
type hostResults struct {
	Files map[string]string `json:"files"`
	Calls map[string][]struct {
		Tool       string         `json:"tool"`
		Args       map[string]any `json:"args"`
		Result     string         `json:"result"`
		EffectOnly string         `json:"effect_only"`
	} `json:"calls"`
}

// What differs from run to run in a host's result, as the capture
// normalized it.
var (
	chunkID  = regexp.MustCompile(`Chunk ID: [0-9a-f]+`)
	wallTime = regexp.MustCompile(`Wall time: [0-9.]+ seconds`)
)

// The calls codex 0.171.0 and gemini-cli 0.61.0 answered with their own
// tools, made to toold in their dialects through the gRPC stream on the
// same files, answer with the same text: codex's exec framing (chunk,
// wall time, exit code, token estimate, output) and apply_patch's,
// gemini-cli's file text, its notice for a part of a file, its empty
// file, its shell output in <untrusted_context> with the exit code only
// when not 0.
func TestDialectsAnswerAsTheHosts(t *testing.T) {
	b, err := os.ReadFile("../tools/dialect/testdata/hosts.json")
	if err != nil {
		t.Fatal(err)
	}
	var h hostResults
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
	for _, name := range []string{"codex", "gemini-cli"} {
		t.Run(name, func(t *testing.T) {
			if len(h.Calls[name]) == 0 {
				t.Fatal("no calls captured")
			}
			for file, text := range h.Files {
				if err := os.WriteFile(filepath.Join(d.Workspace, file), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			os.Remove(filepath.Join(d.Workspace, "added.txt"))
			x := newSession(t, d)
			x.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{Dialect: name, ClientName: "hosts-test"}}})
			for i, c := range h.Calls[name] {
				args, _ := json.Marshal(c.Args)
				res, _ := x.call(fmt.Sprintf("%s%d", name, i), c.Tool, string(args), approveOnce)
				if !res.GetSuccess() {
					t.Errorf("%d %s %s: %v", i, c.Tool, args, res.GetError())
					continue
				}
				if c.EffectOnly != "" {
					continue
				}
				got := ""
				if len(res.GetContent()) > 0 {
					got = res.GetContent()[0].GetText()
				}
				got = wallTime.ReplaceAllString(chunkID.ReplaceAllString(got, "Chunk ID: X"), "Wall time: S seconds")
				if got != c.Result {
					t.Errorf("%d %s %s:\n toold %q\n  host %q", i, c.Tool, args, got, c.Result)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(d.Workspace, "edit.txt")); string(b) != "keep\nnew line\nkeep\n" {
				t.Errorf("edit.txt after the edit: %q", b)
			}
		})
	}
}
