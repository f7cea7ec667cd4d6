package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
)

// TestUnreachable checks that toolctl gives up after --connect-timeout with
// a message saying where toold was expected and how to start it.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	stale := tempSocket(t)
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays; nobody listens: connection refused
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := tcp.Addr().String()
	tcp.Close()

	missing := tempSocket(t)
	tests := []struct {
		name  string
		where []string
		want  []string
	}{
		{"missing socket", []string{"--socket", missing},
			[]string{"cannot reach toold at " + missing + ": no socket there", "is toold running? (make run)"}},
		{"stale socket", []string{"--socket", stale},
			[]string{"cannot reach toold at " + stale + ": is it running? (make run)", "connection refused"}},
		{"tcp", []string{"--addr", closedAddr},
			[]string{"cannot reach toold at " + closedAddr + ": is it running", "connection refused"}},
	}
	for _, tt := range tests {
		for _, cmd := range [][]string{{"health"}, {"tools"}, {"call", "think", "thought=x"}} {
			t.Run(tt.name+"/"+cmd[0], func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				args := append(append(tt.where, "--connect-timeout", "300ms"), cmd...)
				r := cli{}.run(t, args...)
				r.check(t, exitUsage, nil, tt.want)
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("took %s with --connect-timeout 300ms", d)
				}
				if r.stdout != "" {
					t.Errorf("stdout %q", r.stdout)
				}
			})
		}
	}
}

// TestWaitsForStart starts toolctl before toold: toolctl retries until the
// socket answers.
func TestWaitsForStart(t *testing.T) {
	t.Parallel()
	socket := tempSocket(t)
	done := make(chan result, 1)
	// Something that is not toold answers first: once toolctl has tried
	// it, it goes, and toold starts on the same path.
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- runAt(t, socket, "--connect-timeout", "10s", "health") }()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	l.Close() // removes the socket file
	daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Socket = socket }))
	select {
	case r := <-done:
		r.check(t, exitOK, []string{"SERVING"}, nil)
	case <-time.After(8 * time.Second):
		t.Fatal("toolctl did not connect to the daemon once it started")
	}
}

// TestEnvironment checks TOOLD_SOCKET and TOOLD_TOKEN, and that flags win.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Token = "s3cret" }))
	missing := tempSocket(t)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
	}{
		{"socket and token from env", map[string]string{"TOOLD_SOCKET": d.Socket, "TOOLD_TOKEN": "s3cret"}, nil, exitOK},
		{"socket flag wins", map[string]string{"TOOLD_SOCKET": missing, "TOOLD_TOKEN": "s3cret"}, []string{"--socket", d.Socket}, exitOK},
		{"token flag wins", map[string]string{"TOOLD_SOCKET": d.Socket, "TOOLD_TOKEN": "wrong"}, []string{"--token", "s3cret"}, exitOK},
		{"wrong token from env", map[string]string{"TOOLD_SOCKET": d.Socket, "TOOLD_TOKEN": "wrong"}, nil, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--connect-timeout", "300ms"}, tt.args...)
			r := cli{env: tt.env}.run(t, append(args, "tools")...)
			r.check(t, tt.code, nil, nil)
		})
	}
}

// TestToken runs every command against a toold that requires a token.
func TestToken(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.Token = "s3cret" }))
	missing := []string{"requires a token: pass --token or set TOOLD_TOKEN"}
	refused := []string{"refused the token", "check --token or TOOLD_TOKEN"}
	tests := []struct {
		name   string
		token  []string
		cmd    []string
		code   int
		stdout string
		stderr []string
	}{
		{"tools without token", nil, []string{"tools"}, exitUsage, "", missing},
		{"tools wrong token", []string{"--token", "guess"}, []string{"tools"}, exitUsage, "", refused},
		{"tools right token", []string{"--token", "s3cret"}, []string{"tools", "--format", "mcp"}, exitOK, "think", nil},
		{"call without token", nil, []string{"call", "think", "thought=hi"}, exitUsage, "", missing},
		{"call wrong token", []string{"--token", "guess"}, []string{"call", "think", "thought=hi"}, exitUsage, "", refused},
		{"call wrong token json", []string{"--token", "guess"}, []string{"call", "think", "thought=hi", "--json"}, exitUsage, "", refused},
		{"call right token", []string{"--token", "s3cret"}, []string{"call", "think", "thought=hi"}, exitOK, "hi\n", nil},
		{"health needs none", nil, []string{"health"}, exitOK, "SERVING\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"--socket", d.Socket}, tt.token...), tt.cmd...)
			r := cli{}.run(t, args...)
			r.check(t, tt.code, nil, tt.stderr)
			if tt.stdout == "" && r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout %q lacks %q", r.stdout, tt.stdout)
			}
		})
	}
}

// TestMissingSocketFailsAtOnce: with no socket file, every command — the
// agents' hook among them — fails at once, whatever --connect-timeout says
// (with a ten-minute timeout, waiting would time the test out); a relative
// socket is shown as the absolute path it was looked for at, with the
// TOOLD_SOCKET advice.
func TestMissingSocketFailsAtOnce(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"health"}, {"tools"}, {"call", "think", "thought=x"}, {"hook", "--format", "claude-code"}} {
		t.Run(cmd[0], func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--socket", "no-such-dir/toold.sock", "--connect-timeout", "10m"}, cmd...)
			r := cli{stdin: `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`}.run(t, args...)
			abs, _ := filepath.Abs("no-such-dir/toold.sock")
			r.check(t, exitUsage, nil, []string{"no socket there (" + abs + " does not exist)", "set TOOLD_SOCKET to the absolute path"})
		})
	}
}
