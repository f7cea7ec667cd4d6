package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/memory/pgtest"
	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
	"github.com/toold/toold/pkg/tools"
)

func TestMain(m *testing.M) {
	// Commands run under a helper process; the test binary stands in.
	sandbox.RunHelperIfRequested()
	runAsTooldIfRequested() // crash_e2e_test.go
	goleak.VerifyTestMain(stopPostgres{m})
}

// stopPostgres stops the PostgreSQL server the memory tests may have
// started, after the tests and before goleak looks for leftovers.
type stopPostgres struct{ m *testing.M }

func (s stopPostgres) Run() int {
	code := s.m.Run()
	pgtest.StopShared()
	return code
}

func TestSocketIsPrivate(t *testing.T) {
	d := daemontest.Start(t)
	fi, err := os.Stat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, want a socket with 0600", fi.Mode())
	}
}

func TestHealthAndToken(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Token = "s3cret" }))
	ctx := context.Background()
	// Health needs no token.
	hc := healthpb.NewHealthClient(d.Conn)
	for _, svc := range []string{"", "toold.v1.ToolService"} {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v %v", svc, resp, err)
		}
	}
	tests := []struct {
		name  string
		token string
		want  codes.Code
	}{
		{"no token", "", codes.Unauthenticated},
		{"wrong token", "guess", codes.Unauthenticated},
		{"right token", "s3cret", codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cctx := ctx
			if tt.token != "" {
				cctx = metadata.AppendToOutgoingContext(ctx, "authorization", "bearer "+tt.token)
			}
			_, err := d.Client.ListTools(cctx, &pb.ListToolsRequest{})
			if status.Code(err) != tt.want {
				t.Fatalf("ListTools: %v, want %v", err, tt.want)
			}
			s, err := d.Client.ExecuteTool(cctx)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == codes.OK {
				if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{}}}); err != nil {
					t.Fatal(err)
				}
				if ev, err := s.Recv(); err != nil || ev.GetWelcome() == nil {
					t.Fatalf("authorized stream: %v %v", ev, err)
				}
				s.CloseSend()
				return
			}
			_, err = s.Recv() // the stream fails at once without the token
			if status.Code(err) != tt.want {
				t.Fatalf("ExecuteTool: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*config.Config)
		wantErr string
	}{
		{"defaults are valid", func(*config.Config) {}, ""},
		{"loopback TCP without token", func(c *config.Config) { c.Listen = "127.0.0.1:0" }, ""},
		{"public TCP without token", func(c *config.Config) { c.Listen = "0.0.0.0:7777" }, "not a loopback address"},
		{"public TCP with token", func(c *config.Config) { c.Listen = "0.0.0.0:7777"; c.Token = "t" }, ""},
		{"bad mode", func(c *config.Config) { c.ApprovalMode = "sometimes" }, "unknown approval mode"},
		{"nothing to listen on", func(c *config.Config) { c.Socket = "" }, "nothing to listen on"},
		{"default above max", func(c *config.Config) {
			c.Timeouts.Default = config.Duration(time.Hour)
			c.Timeouts.Max = config.Duration(time.Minute)
		}, "exceeds"},
		{"bad log format", func(c *config.Config) { c.Log.Format = "xml" }, "log.format"},
		{"bad memory backend", func(c *config.Config) { c.Memory.Backend = "mysql" }, "memory.backend"},
		{"postgres without dsn", func(c *config.Config) { c.Memory.Backend = "postgres" }, "memory.dsn"},
		{"embeddings without model", func(c *config.Config) { c.Memory.Embeddings.URL = "http://127.0.0.1:1/v1/embeddings" }, "model"},
		{"embeddings not http", func(c *config.Config) {
			c.Memory.Embeddings.URL = "file:///etc/passwd"
			c.Memory.Embeddings.Model = "m"
		}, "http"},
		{"memory off", func(c *config.Config) { c.Memory.Backend = "off" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "toold.yaml")
	os.WriteFile(p, []byte("workspace: /srv\napproval_mode: ask\ntimeouts:\n  default: 45s\nlimits:\n  calls_per_stream: 8\n"), 0o644)
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Workspace != "/srv" || c.ApprovalMode != "ask" || time.Duration(c.Timeouts.Default) != 45*time.Second ||
		c.Limits.CallsPerStream != 8 || time.Duration(c.Timeouts.Max) != 30*time.Minute || c.Socket != "./toold.sock" {
		t.Fatalf("loaded %+v", c)
	}
	os.WriteFile(p, []byte("workspce: /typo\n"), 0o644)
	if _, err := config.Load(p); err == nil || !strings.Contains(err.Error(), "workspce") {
		t.Fatalf("unknown key: %v", err)
	}
	os.WriteFile(p, []byte("timeouts:\n  default: soon\n"), 0o644)
	if _, err := config.Load(p); err == nil {
		t.Fatal("bad duration accepted")
	}
}

func TestSocketTakeover(t *testing.T) {
	dir, _ := os.MkdirTemp("", "toold-sock")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "t.sock")

	// A stale socket (nobody listening) is replaced.
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Socket = sock }))

	// A live one is refused.
	m := &daemon.Main{Config: config.Default(), Logger: d.Main.Logger}
	m.Config.Socket = sock
	m.Config.Workspace = t.TempDir()
	m.Config.StateDir = t.TempDir()
	if err := m.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "another toold") {
		m.Close()
		t.Fatalf("second daemon on a live socket: %v", err)
	}

	// A regular file is not clobbered.
	reg := filepath.Join(dir, "file")
	os.WriteFile(reg, []byte("keep"), 0o644)
	m2 := &daemon.Main{Config: config.Default(), Logger: d.Main.Logger}
	m2.Config.Socket = reg
	m2.Config.Workspace = t.TempDir()
	m2.Config.StateDir = t.TempDir()
	if err := m2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "not a socket") {
		m2.Close()
		t.Fatalf("socket over a file: %v", err)
	}
	if b, _ := os.ReadFile(reg); string(b) != "keep" {
		t.Fatal("file was clobbered")
	}
}

func TestTCPListener(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Listen = "127.0.0.1:0" }))
	addr := d.Main.TCPAddr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("tcp addr = %q", addr)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := pb.NewToolServiceClient(conn).ListTools(context.Background(), &pb.ListToolsRequest{})
	if err != nil || len(resp.GetTools()) == 0 {
		t.Fatalf("ListTools over TCP: %v %v", resp, err)
	}
}

// grpcurl, the tool people debug with, drives the daemon through
// reflection alone: list, describe, and a bidi call from stdin.
func TestGrpcurl(t *testing.T) {
	grpcurl := requireTool(t, "grpcurl")
	d := daemontest.Start(t)
	target := "unix:" + d.Socket
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(grpcurl, append([]string{"-plaintext"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("grpcurl %v: %v\n%s", args, err, stderr.String())
		}
		return string(out)
	}
	if out := run("", target, "list"); !strings.Contains(out, "toold.v1.ToolService") || !strings.Contains(out, "grpc.health.v1.Health") {
		t.Fatalf("list: %s", out)
	}
	if out := run("", target, "describe", "toold.v1.ToolService"); !strings.Contains(out, "rpc ExecuteTool ( stream .toold.v1.ClientMessage ) returns ( stream .toold.v1.ServerEvent )") {
		t.Fatalf("describe: %s", out)
	}
	if out := run("", target, "describe", "toold.v1.ToolCall"); !strings.Contains(out, "arguments_json") {
		t.Fatalf("describe message: %s", out)
	}
	tools := run("", target, "toold.v1.ToolService/ListTools")
	if !strings.Contains(tools, `"name": "think"`) {
		t.Fatalf("ListTools: %s", tools)
	}
	in := `{"hello":{"conversationId":"grpcurl"}}
{"call":{"callId":"1","name":"think","argumentsJson":"{\"thought\":\"hello from grpcurl\"}"}}
{"call":{"callId":"2","name":"thinkk","argumentsJson":"{}"}}
`
	out := run(in, "-d", "@", target, "toold.v1.ToolService/ExecuteTool")
	// grpcurl prints one JSON object per event.
	dec := json.NewDecoder(strings.NewReader(out))
	ends := map[string]map[string]any{}
	var first map[string]any
	for dec.More() {
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		if first == nil {
			first = ev
		}
		if end, ok := ev["end"].(map[string]any); ok {
			ends[ev["callId"].(string)] = end["result"].(map[string]any)
		}
	}
	if first["welcome"] == nil {
		t.Fatalf("first event is not a Welcome: %v", first)
	}
	if ends["1"]["success"] != true {
		t.Fatalf("call 1: %v", ends["1"])
	}
	e2, _ := ends["2"]["error"].(map[string]any)
	if e2["code"] != "ERROR_CODE_TOOL_NOT_FOUND" || !strings.Contains(e2["message"].(string), `did you mean "think"`) {
		t.Fatalf("call 2: %v", ends["2"])
	}
}

// README's grpcurl conversation, run as printed (the heredoc between
// "ExecuteTool <<'EOF'" and "EOF") under AUTO: grpcurl closes its side at
// EOF, so the call that needs an approval cannot get one. It must end
// DENIED saying why, and the stream must end (grpcurl exits 0), not wait
// forever with keepalives.
func TestGrpcurlReadmeConversation(t *testing.T) {
	grpcurl := requireTool(t, "grpcurl")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "toold.v1.ToolService/ExecuteTool <<'EOF'\n")
	heredoc, _, ok2 := strings.Cut(rest, "\nEOF\n")
	if !ok || !ok2 {
		t.Fatal("README has no grpcurl ExecuteTool heredoc")
	}
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) {
		c.ApprovalMode = "auto"
		c.Keepalive = config.Duration(50 * time.Millisecond) // keepalives must not keep it open
	}))
	if err := os.WriteFile(filepath.Join(d.Workspace, "Makefile"), []byte("all:\n\techo one\n\techo two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, grpcurl, "-plaintext", "-d", "@", "unix:"+d.Socket, "toold.v1.ToolService/ExecuteTool")
	cmd.Stdin = strings.NewReader(heredoc + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end after grpcurl closed its side:\n%s", out)
	}
	if err != nil {
		t.Fatalf("grpcurl: %v\n%s\n%s", err, stderr.String(), out)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	ends := map[string]map[string]any{}
	for dec.More() {
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		if end, ok := ev["end"].(map[string]any); ok {
			ends[ev["callId"].(string)] = end["result"].(map[string]any)
		}
	}
	if len(ends) != 4 || ends["1"]["success"] != true || ends["2"]["success"] != true {
		t.Fatalf("ends: %v\n%s", ends, out)
	}
	e4, _ := ends["4"]["error"].(map[string]any)
	if e4["code"] != "ERROR_CODE_DENIED" || !strings.Contains(fmt.Sprint(e4["message"]), "closed its side of the stream") {
		t.Fatalf("call 4 (needs an approval after the client closed its side): %v\n%s", ends["4"], out)
	}
}

// requireTool finds a third-party program the Makefile installs. Under
// `make test` (TOOLD_REQUIRE_PEERS=1) its absence fails the test; a plain
// `go test` skips with the reason.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"../../bin", "bin"} {
		if p, err := filepath.Abs(filepath.Join(dir, name)); err == nil {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	testenv.Need(t, errors.New("not installed"), name+" (make test-deps)")
	return ""
}

// A stream stays usable for many calls, and ListTools agrees with the
// registry order (think first).
func TestListToolsOrder(t *testing.T) {
	d := daemontest.Start(t)
	resp, err := d.Client.ListTools(context.Background(), &pb.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ts := range resp.GetTools() {
		names = append(names, ts.GetName())
	}
	var want []string
	for _, bt := range daemon.BuiltinTools(nil, tools.Limits{}, authz.Capabilities{}, nil, nil) {
		want = append(want, bt.Spec().Name)
	}
	if strings.Join(names, ",") != strings.Join(want, ",") || names[0] != "think" {
		t.Fatalf("tools = %v, want the built-ins in order %v", names, want)
	}

}

// Every built-in operation's schema compiles: toold compiles them on first
// use (pkg/tools), so this test is what keeps a broken one from reaching a
// call.
func TestBuiltinSchemasCompile(t *testing.T) {
	for _, bt := range daemon.BuiltinTools(nil, tools.Limits{}, authz.Capabilities{}, nil, nil) {
		if err := tools.CheckSchemas(bt); err != nil {
			t.Errorf("%s: %v", bt.Spec().Name, err)
		}
	}
}

// slowTool blocks until its context ends.
type slowTool struct{ started chan struct{} }

func (s *slowTool) Spec() tools.Spec {
	return tools.Spec{Name: "slow", Operations: []tools.OperationSpec{{Name: "slow", Risk: tools.RiskLow, Schema: json.RawMessage(`{"type":"object"}`)}}}
}
func (s *slowTool) Describe(*tools.Call) tools.Effect { return tools.Effect{Display: "Waiting"} }
func (s *slowTool) Run(ctx context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	close(s.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

// Close gives running calls the grace period, then cancels them; each still
// gets its ToolCallEnd and the stream ends with OK.
func TestCloseCancelsAfterGrace(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ShutdownGrace = config.Duration(300 * time.Millisecond) }))
	st := &slowTool{started: make(chan struct{})}
	if err := d.Main.Registry().Register(st); err != nil {
		t.Fatal(err)
	}
	s, err := d.Client.ExecuteTool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: "s", Name: "slow"}}})
	<-st.started
	began := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- d.Main.Close() }()
	var end *pb.ToolCallEnd
	for {
		ev, err := s.Recv()
		if err != nil {
			if end == nil {
				t.Fatalf("stream ended (%v) before the call's end", err)
			}
			if status.Code(err) != codes.OK && err.Error() != "EOF" {
				t.Fatalf("stream ended with %v", err)
			}
			break
		}
		if e := ev.GetEnd(); e != nil {
			end = e
		}
	}
	if end.GetResult().GetError().GetCode() != pb.ErrorCode_ERROR_CODE_CANCELED {
		t.Fatalf("end = %v", end)
	}
	if waited := time.Since(began); waited < 250*time.Millisecond {
		t.Fatalf("call canceled after %v, before the grace period", waited)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}
