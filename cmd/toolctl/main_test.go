package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/tools"
)

// cli runs toolctl in-process, as run does, with a controlled environment.
type cli struct {
	ctx   context.Context // defaults to the test's context
	stdin string
	env   map[string]string // the only environment toolctl sees
	tty   bool              // stderr (and stdout) count as terminals: human mode
}

// result is what one toolctl run produced.
type result struct {
	code           int
	stdout, stderr string
}

func (c cli) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx := c.ctx
	if ctx == nil {
		ctx = t.Context()
	}
	var stdout, stderr bytes.Buffer
	a := &app{
		stdin:         strings.NewReader(c.stdin),
		stdout:        &stdout,
		stderr:        &stderr,
		getenv:        func(k string) string { return c.env[k] },
		isTerminal:    func(io.Writer) bool { return c.tty },
		terminalWidth: func(io.Writer) int { return 0 },
	}
	code := a.run(ctx, args)
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	if testing.Verbose() {
		t.Logf("toolctl %s\nexit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// runAsOperator runs toolctl against d as its operator: toolctl finds the
// operator credential in d's state directory (TOOLD_STATE_DIR), as it
// does in toold's default state directory for the user toold runs as.
func runAsOperator(t *testing.T, d *daemontest.Daemon, args ...string) result {
	t.Helper()
	return cli{env: map[string]string{"TOOLD_STATE_DIR": d.Main.Config.StateDir}}.run(t, append([]string{"--socket", d.Socket}, args...)...)
}

// runAt runs toolctl against the daemon on socket.
func runAt(t *testing.T, socket string, args ...string) result {
	t.Helper()
	return cli{}.run(t, append([]string{"--socket", socket}, args...)...)
}

func (r result) check(t *testing.T, code int, stdoutHas, stderrHas []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stdoutHas {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

// fakeTool is a func-field fake tool with a single operation.
type fakeTool struct {
	name, schema string
	display      func(*tools.Call) string
	run          func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)
}

var _ tools.Tool = (*fakeTool)(nil)

func (f *fakeTool) Spec() tools.Spec {
	return tools.Spec{Name: f.name, Description: "A test tool.", Source: "builtin", Operations: []tools.OperationSpec{{
		Name: f.name, Description: "A test tool.", Risk: tools.RiskLow, Schema: json.RawMessage(f.schema),
	}}}
}

func (f *fakeTool) Describe(c *tools.Call) tools.Effect {
	if f.display == nil {
		return tools.Effect{}
	}
	return tools.Effect{Display: f.display(c)}
}

func (f *fakeTool) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	return f.run(ctx, c, s)
}

// startDaemon starts a real toold with the test tools registered after the
// built-ins: echo (returns its arguments as JSON), spew (writes output
// chunks and progress), and sleep (waits for ms or its context; it reports
// on started and canceled when given).
func startDaemon(t *testing.T, started, canceled chan<- string, opts ...daemontest.Option) *daemontest.Daemon {
	t.Helper()
	d := daemontest.Start(t, opts...)
	echo := &fakeTool{
		name:   "echo",
		schema: `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["text"],"additionalProperties":false}`,
		display: func(c *tools.Call) string {
			s, _ := c.Args["text"].(string)
			return "Echoing: " + s
		},
		run: func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
			b, err := json.Marshal(c.Args)
			return &tools.Result{JSON: b}, err
		},
	}
	spew := &fakeTool{
		name:   "spew",
		schema: `{"type":"object"}`,
		run: func(_ context.Context, _ *tools.Call, s *tools.Sink) (*tools.Result, error) {
			_ = s.Progress("warming up", 0.25)
			_ = s.Output(tools.Stdout, []byte("out line\n"))
			_ = s.Output(tools.Stderr, []byte("err line\n"))
			_ = s.Progress("almost done", 0.9)
			return &tools.Result{Text: "spewed"}, nil
		},
	}
	sleep := &fakeTool{
		name:    "sleep",
		schema:  `{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}`,
		display: func(*tools.Call) string { return "Sleeping" },
		run: func(ctx context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
			var a struct{ MS int }
			_ = c.Bind(&a)
			if started != nil {
				started <- c.ID
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
				return &tools.Result{Text: "slept"}, nil
			case <-ctx.Done():
				if canceled != nil {
					canceled <- c.ID
				}
				return nil, ctx.Err()
			}
		},
	}
	if err := d.Main.Registry().Register(echo, spew, sleep); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := cli{}.run(t, "--version")
	r.check(t, exitOK, []string{"toolctl " + version + "\n"}, nil)
}

// TestUsageErrors checks that mistakes on the command line exit 2 with a
// message, without trying to reach toold.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"tools", "--nope"}, "unknown flag: --nope"},
		{"call without name", []string{"call"}, "requires at least 1 arg"},
		{"tools with args", []string{"tools", "extra"}, "unknown command"},
		{"pair without =", []string{"call", "think", "thought"}, `argument "thought": want key=value or key:=JSON`},
		{"pair without key", []string{"call", "think", "=x"}, "the key is empty"},
		{"raw pair without key", []string{"call", "think", ":=1"}, "the key is empty"},
		{"raw pair bad JSON", []string{"call", "think", "n:=abc"}, "not valid JSON"},
		{"args bad JSON", []string{"call", "think", "--args", "{"}, "--args is not valid JSON"},
		{"args not an object", []string{"call", "think", "--args", "[1]"}, "--args must be a JSON object"},
		{"args null", []string{"call", "think", "--args", "null"}, "got null"},
		{"args trailing data", []string{"call", "think", "--args", "{} {}"}, "extra data"},
		{"negative timeout", []string{"call", "think", "--timeout", "-1s"}, "--timeout must be positive"},
		{"bad timeout", []string{"call", "think", "--timeout", "soon"}, "invalid argument"},
		{"bad format", []string{"tools", "--format", "cohere"}, `--format "cohere"`},
		{"flat without format", []string{"tools", "--flat"}, "--flat needs --format"},
		{"socket and addr", []string{"health", "--socket", "x.sock", "--addr", "127.0.0.1:1"}, "exclude each other"},
		{"zero connect timeout", []string{"health", "--connect-timeout", "0s"}, "--connect-timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--socket", "/nonexistent/toold.sock"}, tt.args...)
			r := cli{}.run(t, args...)
			r.check(t, exitUsage, nil, []string{tt.want})
			if strings.Contains(r.stderr, "cannot reach") {
				t.Errorf("a usage error tried to reach toold:\n%s", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestBuildArguments covers the argument syntax of call.
func TestBuildArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    string
		argsSet bool
		pairs   []string
		stdin   string
		want    string
	}{
		{name: "nothing", want: ""},
		{name: "string pair", pairs: []string{"path=main.go"}, want: `{"path":"main.go"}`},
		{name: "value with =", pairs: []string{"expr=a=b"}, want: `{"expr":"a=b"}`},
		{name: "empty value", pairs: []string{"q="}, want: `{"q":""}`},
		{name: "numbers stay strings", pairs: []string{"n=42"}, want: `{"n":"42"}`},
		{name: "raw JSON", pairs: []string{"n:=42", "ok:=true", "tags:=[\"a\",\"b\"]", "o:={\"x\":null}"},
			want: `{"n":42,"o":{"x":null},"ok":true,"tags":["a","b"]}`},
		{name: "big number keeps its text", pairs: []string{"n:=12345678901234567890"}, want: `{"n":12345678901234567890}`},
		{name: "args", args: `{"a": 1.50, "b": "x"}`, argsSet: true, want: `{"a":1.50,"b":"x"}`},
		{name: "empty args object", args: `{}`, argsSet: true, want: `{}`},
		{name: "pairs win over args", args: `{"a":1,"b":"x"}`, argsSet: true, pairs: []string{"b=y", "c:=2"}, want: `{"a":1,"b":"y","c":2}`},
		{name: "stdin", args: "-", argsSet: true, stdin: "{\"path\": \"go.mod\"}\n", want: `{"path":"go.mod"}`},
		{name: "stdin and pairs", args: "-", argsSet: true, stdin: `{"path":"go.mod","limit":1}`, pairs: []string{"limit:=5"}, want: `{"limit":5,"path":"go.mod"}`},
		{name: "key with colon", pairs: []string{"a:b=c"}, want: `{"a:b":"c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := buildArguments(tt.args, tt.argsSet, tt.pairs, strings.NewReader(tt.stdin))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
