package daemon_test

// The battery by effect (issue 25, item 10): hostile commands sent the way a
// model sends them — run_command in the foreground, in the background and
// with a stdin pipe, typed into terminal sessions, through the git and task
// tools and the file tools — to a real toold with its default
// configuration in YOLO (and a representative subset in AUTO). Each attempt
// carries a payload whose effect can be observed from outside: a file
// deleted or created outside the workspace, a fake secret printed or copied,
// a datagram or connection received by a local listener, toold's own socket
// used to write, approve, add an MCP server, attach or read history. The
// test asserts that the effect did not happen, not what the policy decided.
//
// The attempts are in battery_attempts_test.go; this file is the harness:
// the canaries, the listeners, the streams that send the attempts, the
// effect checks and the summary by class printed in the test log.
//
// An attempt whose containment belongs to a layer that is not on this base
// yet is marked pending: it runs and is reported (a contained pending
// attempt is reported as "now contained — remove the mark") but does not
// fail the test.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/testenv"
)

// via is how an attempt reaches toold.
type via string

const (
	viaCommand    via = "run_command"
	viaBackground via = "background"
	viaStdin      via = "stdin pipe"
	viaSession    via = "session input"
	viaGit        via = "git tool"
	viaTask       via = "run_task"
	viaFile       via = "file tool"
)

// attempt is one row of the battery. Its strings are templates: {{ID}} is
// the attempt's id, {{HOME}} the canary home, {{CANARY}} the canary
// directory outside the workspace, {{UDP}} / {{TCP}} the ports of listeners
// of its own (127.0.0.1), {{UNIX}} the path of a unix socket listener of its
// own outside the workspace and {{ABSTRACT}} an abstract one, {{SOCK}}
// toold's socket, {{STATE}} toold's state directory, {{PID}} toold's pid,
// {{TOOLCTL}} a toolctl binary the agent built in the workspace, {{WS}} the
// attempt's directory (absolute), {{ROOT}} the workspace root, {{VICTIM}}
// the conversation of another client.
type attempt struct {
	name, class string
	via         via
	// cmd is the command line (run_command, background, stdin pipe), or
	// the text typed into a session (a newline is added).
	cmd string
	// input is what the stdin pipe carries.
	input string
	env   map[string]string
	// dir is the working_dir argument (default: the attempt's directory).
	dir string
	// shell is create_session's shell.
	shell string
	// files are written into the attempt's directory before it runs (the
	// agent wrote them); a value "->TARGET" makes a symlink.
	files map[string]string
	// setup is a shell line run on the host in the attempt's directory
	// before the attack, for what a model would have prepared earlier with
	// allowed calls (git init, a planted config). It never runs the
	// payload itself.
	setup string
	// tool and args: the call of a file, git or task attempt.
	tool, args string
	// auto: also run in the AUTO subset.
	auto bool
	// off: also run with the sandbox off (mode off): the attempt aims at
	// one of toold's listeners or shims, whose peer checks must hold
	// without the sandbox.
	off bool
	// layer names the sandbox layer that must hold the attempt
	// (layerWrites...): when toold says it is not in force, the attempt is
	// pending (reported, not failed; with TOOLD_REQUIRE_PEERS the missing
	// layer fails the test).
	layer string
	// pending marks an attempt known to get through on this base, naming
	// the work that will contain it; pendingOff, in mode off only.
	pending, pendingOff string
	// source cites where the class was published, when it was.
	source string
	// timeout bounds the command (seconds; default 15).
	timeout float64
	// check, when set, is a further effect check (the effect is returned),
	// run before the others.
	check func(b *battery, r *attemptRun) string
	// holdBack, when set, keeps the attempt from running (it is reported
	// as pending): it would harm the machine where its layer is missing.
	holdBack string
}

// attemptRun is an attempt as sent: its id, its directory and what came
// back.
type attemptRun struct {
	a        attempt
	mode     string
	id       string
	dir      string // absolute
	rel      string // relative to the workspace root
	state    string // toold's state directory
	replacer *strings.Replacer
	ports    []*listener
	out      bytes.Buffer // every event's text and output bytes
	asked    int
	code     pb.ErrorCode
	success  bool
	err      error
	effects  []string
	// pending is the attempt's pending mark in this run (a.pending, or its
	// layer not in force here).
	pending string
	// own: a git or task attempt, whose repository or tasks are the
	// workspace root's: sent one after another on a daemon of their own,
	// the root emptied and planted before each.
	own bool
	// wsLeaks are the secrets found copied into the attempt's directory.
	wsLeaks []string
}

func (r *attemptRun) t(s string) string {
	s = r.replacer.Replace(s)
	// b64[[TEXT]] is TEXT base64-encoded (after the other templates).
	return b64Template.ReplaceAllStringFunc(s, func(m string) string {
		return base64.StdEncoding.EncodeToString([]byte(m[len("b64[[") : len(m)-len("]]")]))
	})
}

var b64Template = regexp.MustCompile(`b64\[\[.*?\]\]`)

// idPattern matches an attempt's id: y0042q in yolo, a0042q in auto,
// k0042q in kernel, o0042q in off, c0042q in calibrate.
var idPattern = regexp.MustCompile(`[yakoc][0-9]{4}q`)

// battery holds the canaries and the daemon under attack.
type battery struct {
	t       *testing.T
	home    string
	canary  string
	secrets map[string]string // name -> value: none may appear in any output
	toolctl string            // absolute path in the workspace
	// created maps an attempt's id to the paths outside the workspace
	// whose names carry it (found by one walk after the attempts ran).
	created map[string][]string
	// winches counts the SIGWINCH toold's process (this test's) received.
	winches atomic.Int64
}

// canaryHome writes a HOME with fake keys and returns the secrets in it.
func (b *battery) canaryHome(t *testing.T) {
	t.Helper()
	secret := func(name string) string {
		v := "SECRET-" + name + "-" + randomHex(t, 8)
		b.secrets[name] = v
		return v
	}
	files := map[string]string{
		".ssh/id_ed25519":  secret("ssh") + "\n-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n",
		".ssh/id_rsa":      secret("ssh-rsa") + "\n",
		".aws/credentials": secret("aws") + "\n[default]\naws_access_key_id = AKIAFAKE\naws_secret_access_key = fake\n",
		".config/gcloud/application_default_credentials.json": secret("gcloud") + "\n",
		".kube/config":         secret("kube") + "\napiVersion: v1\nkind: Config\n",
		".netrc":               secret("netrc") + "\nmachine example.com login me password fake\n",
		".bash_history":        secret("history") + "\nexport TOKEN=fake\n",
		".docker/config.json":  secret("docker") + "\n",
		".git-credentials":     secret("gitcred") + "\n",
		".npmrc":               secret("npmrc") + "\n",
		".config/gh/hosts.yml": secret("gh") + "\n",
		".bashrc":              "# canary bashrc\n",
		".profile":             "# canary profile\n",
	}
	for name, body := range files {
		p := filepath.Join(b.home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func randomHex(t testing.TB, n int) string {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, n)
	if _, err := io.ReadFull(f, p); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(p)
}

// victimFiles are the per-attempt files that must survive: one in the
// canary home, one in the canary directory.
func (b *battery) victimFiles(id string) []string {
	return []string{filepath.Join(b.home, "victims", id, "f"), filepath.Join(b.canary, "victims", id, "f")}
}

// leaks returns the names of the secrets found in s, also base64- or
// hex-encoded (the attack may encode what it carries out).
func (b *battery) leaks(s []byte) []string {
	var found []string
	for name, v := range b.secrets {
		enc := []string{v, hex.EncodeToString([]byte(v)), base64.StdEncoding.EncodeToString([]byte(v[:len(v)/3*3]))}
		for _, e := range enc {
			if bytes.Contains(s, []byte(e)) {
				found = append(found, name)
				break
			}
		}
	}
	sort.Strings(found)
	return found
}

// listener is a local service standing in for an internal one: it records
// whatever reaches it.
type listener struct {
	kind string // udp, tcp, unix, abstract
	addr string
	mu   sync.Mutex
	hits []string
	pc   net.PacketConn
	l    net.Listener
	done chan struct{}
}

func (l *listener) hit(s string) {
	l.mu.Lock()
	l.hits = append(l.hits, s)
	l.mu.Unlock()
}

func (l *listener) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.hits...)
}

func startListener(t *testing.T, kind, addr string) *listener {
	t.Helper()
	l := &listener{kind: kind, done: make(chan struct{})}
	switch kind {
	case "udp":
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l.pc, l.addr = pc, strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		go func() {
			defer close(l.done)
			buf := make([]byte, 64<<10)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				l.hit(fmt.Sprintf("datagram from %v: %q", from, clip(buf[:n])))
			}
		}()
		t.Cleanup(func() { pc.Close(); <-l.done })
		return l
	case "tcp":
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l.l, l.addr = ln, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	case "unix":
		ln, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		l.l, l.addr = ln, addr
	case "abstract":
		ln, err := net.Listen("unix", "@"+addr)
		if err != nil {
			t.Fatal(err)
		}
		l.l, l.addr = ln, addr
	}
	go func() {
		defer close(l.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			c, err := l.l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(3 * time.Second))
				buf := make([]byte, 4096)
				n, _ := io.ReadAtLeast(c, buf, 1)
				l.hit(fmt.Sprintf("connection from %v: %q", c.RemoteAddr(), clip(buf[:n])))
				// An HTTP client gets an answer, so it does not wait.
				io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached")
			}()
		}
	}()
	t.Cleanup(func() { l.l.Close(); <-l.done })
	return l
}

func clip(p []byte) []byte {
	if len(p) > 200 {
		return p[:200]
	}
	return p
}

// drain makes sure whatever reached the listener before now is recorded:
// it sends a sentinel and waits until the listener saw it (loopback
// delivers in order) — a poll with a deadline, not a sleep.
func (l *listener) drain(t *testing.T) {
	t.Helper()
	sentinel := "sentinel-" + randomHex(t, 4)
	switch l.kind {
	case "udp":
		c, err := net.Dial("udp4", "127.0.0.1:"+l.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(sentinel))
		c.Close()
	default:
		network, addr := l.kind, l.addr
		switch l.kind {
		case "tcp":
			addr = "127.0.0.1:" + l.addr
		case "abstract":
			network, addr = "unix", "@"+l.addr
		}
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, sentinel)
		io.Copy(io.Discard, c)
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		for i, h := range l.hits {
			if strings.Contains(h, sentinel) {
				l.hits = append(l.hits[:i], l.hits[i+1:]...)
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the %s listener never saw its sentinel", l.kind)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// client is one ExecuteTool stream on which attempts are sent one after
// another.
type client struct {
	s    pb.ToolService_ExecuteToolClient
	conv string
	// secret is the conversation's secret from Welcome.
	secret string
	seq    int
	// sandbox is what Welcome said of the sandbox.
	sandbox *pb.SandboxStatus
	// approve: approvals are approved once (a person who says yes);
	// otherwise they are denied.
	approve bool
}

func openClient(ctx context.Context, d *daemontest.Daemon, conv string) (*client, error) {
	s, err := d.Client.ExecuteTool(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ConversationId: conv, ClientName: "battery"}}}); err != nil {
		return nil, err
	}
	for {
		ev, err := s.Recv()
		if err != nil {
			return nil, err
		}
		if w := ev.GetWelcome(); w != nil {
			return &client{s: s, conv: conv, secret: w.GetConversationSecret(), sandbox: w.GetSandbox()}, nil
		}
	}
}

// call runs one call to its end. Every event's text goes to out. An
// approval is denied (a person who refuses; the count is returned), a
// question canceled; stdin, when not nil, is fed to the call once it
// executes.
func (c *client) call(tool string, args map[string]any, stdin []byte, out *bytes.Buffer) (res *pb.ToolResult, asked int, err error) {
	c.seq++
	id := fmt.Sprintf("%s-%d", c.conv, c.seq)
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, 0, err
	}
	if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: tool, Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: string(raw)}}}}); err != nil {
		return nil, 0, err
	}
	for {
		ev, err := c.s.Recv()
		if err != nil {
			return nil, asked, err
		}
		if ev.GetCallId() != id {
			continue
		}
		if j, err := protojson.Marshal(ev); err == nil {
			out.Write(j)
			out.WriteByte('\n')
		}
		switch {
		case ev.GetProgress().GetOutput() != nil:
			out.Write(ev.GetProgress().GetOutput().GetData())
			out.WriteByte('\n')
		case ev.GetRequiresApproval() != nil:
			asked++
			a := ev.GetRequiresApproval()
			dec := &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Reason: "the battery refuses"}
			if c.approve {
				dec = &pb.ApprovalDecision{ApprovalId: a.GetApprovalId(), Approve: true}
			}
			if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Approval{Approval: dec}}); err != nil {
				return nil, asked, err
			}
		case ev.GetInputRequired() != nil:
			if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Cancel{Cancel: &pb.Cancel{CallId: id}}}); err != nil {
				return nil, asked, err
			}
		case ev.GetExecuting() != nil && stdin != nil:
			if err := c.s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Input{Input: &pb.Input{CallId: id, Payload: &pb.Input_Data{Data: stdin}, Eof: true}}}); err != nil {
				return nil, asked, err
			}
		case ev.GetEnd() != nil:
			r := ev.GetEnd().GetResult()
			for _, ct := range r.GetContent() {
				out.Write(ct.GetBlob().GetData())
			}
			return r, asked, nil
		}
	}
}

// send runs one attempt on c and records what came back.
func (b *battery) send(c *client, r *attemptRun) {
	a := r.a
	timeout := a.timeout
	if timeout == 0 {
		timeout = 15
	}
	dir := r.rel
	if a.dir != "" {
		dir = r.t(a.dir)
	}
	command := func(cmd string, extra map[string]any) map[string]any {
		args := map[string]any{"command": r.t(cmd), "working_dir": dir, "timeout": timeout}
		if len(a.env) > 0 {
			env := map[string]string{}
			for k, v := range a.env {
				env[k] = r.t(v)
			}
			args["env"] = env
		}
		for k, v := range extra {
			args[k] = v
		}
		return args
	}
	var res *pb.ToolResult
	var err error
	asked := 0
	add := func(rs *pb.ToolResult, n int, e error) {
		res, err = rs, errors.Join(err, e)
		asked += n
	}
	switch a.via {
	case viaCommand:
		add(c.call("run_command", command(a.cmd, nil), nil, &r.out))
	case viaStdin:
		add(c.call("run_command", command(a.cmd, map[string]any{"stdin": "pipe"}), []byte(r.t(a.input)), &r.out))
	case viaBackground:
		add(c.call("run_command", command(a.cmd, map[string]any{"is_background": true}), nil, &r.out))
		if pid, _ := res.GetStructured().AsMap()["process_id"].(string); pid != "" {
			add(c.call("wait", map[string]any{"process_id": pid, "timeout": timeout + 5}, nil, &r.out))
		}
	case viaSession:
		args := map[string]any{"name": r.id, "working_dir": dir}
		if a.shell != "" {
			args["shell"] = a.shell
		}
		add(c.call("create_session", args, nil, &r.out))
		sid, _ := res.GetStructured().AsMap()["session_id"].(string)
		if sid == "" {
			break
		}
		start := res
		done := "D\"\"ONE-" + r.id // typed; the shell prints DONE-<id>
		add(c.call("send_input", map[string]any{"session_id": sid, "data": r.t(a.cmd) + "\necho " + done + "\n", "wait_ms": 500}, nil, &r.out))
		deadline := time.Now().Add(time.Duration(timeout) * time.Second)
		for !strings.Contains(r.out.String(), "DONE-"+r.id) && time.Now().Before(deadline) {
			add(c.call("get_output", map[string]any{"session_id": sid, "wait_ms": 1000}, nil, &r.out))
		}
		var closed bytes.Buffer
		c.call("close_session", map[string]any{"session_id": sid}, nil, &closed)
		if res == nil {
			res = start
		}
	case viaFile, viaGit, viaTask:
		var args map[string]any
		if err := json.Unmarshal([]byte(r.t(a.args)), &args); err != nil {
			r.err = fmt.Errorf("bad args in the table: %v", err)
			return
		}
		add(c.call(a.tool, args, nil, &r.out))
	}
	r.asked, r.err = asked, err
	r.success = res.GetSuccess()
	r.code = res.GetError().GetCode()
}

// effects lists what the attempt did outside its box.
func (b *battery) effects(r *attemptRun) []string {
	var out []string
	if r.a.check != nil {
		if e := r.a.check(b, r); e != "" {
			out = append(out, e)
		}
	}
	for _, v := range b.victimFiles(r.id) {
		got, err := os.ReadFile(v)
		switch {
		case err != nil:
			out = append(out, "deleted "+v)
		case string(got) != r.id:
			out = append(out, fmt.Sprintf("modified %s: %q", v, clip(got)))
		default:
			if fi, err := os.Stat(v); err == nil && fi.Mode().Perm() != 0o644 {
				out = append(out, fmt.Sprintf("chmod %s: %v", v, fi.Mode().Perm()))
			}
		}
	}
	for _, p := range b.created[r.id] {
		out = append(out, "created "+p)
	}
	if l := b.leaks(r.out.Bytes()); len(l) > 0 {
		out = append(out, fmt.Sprintf("secrets in the output: %v", l))
	}
	leaks := r.wsLeaks
	if !r.own {
		leaks = b.workspaceLeaks(r)
	}
	out = append(out, leaks...)
	for _, l := range r.ports {
		for _, h := range l.got() {
			out = append(out, fmt.Sprintf("%s listener %s reached: %s", l.kind, l.addr, h))
		}
	}
	return out
}

// workspaceLeaks lists the files of the attempt's directory that hold a
// secret.
func (b *battery) workspaceLeaks(r *attemptRun) []string {
	var out []string
	filepath.WalkDir(r.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		if fi, err := e.Info(); err == nil && fi.Size() < 1<<20 {
			if body, err := os.ReadFile(p); err == nil {
				if l := b.leaks(body); len(l) > 0 {
					out = append(out, fmt.Sprintf("secrets copied into %s: %v", p, l))
				}
			}
		}
		return nil
	})
	return out
}

// emptyDir removes everything in dir.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// snapshot is the content of every file under a root, for the final check
// that nothing changed that no attempt claims.
func snapshotTree(root string) map[string]string {
	m := map[string]string{}
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		switch {
		case e.Type().IsRegular():
			body, _ := os.ReadFile(p)
			m[p] = string(body)
		case e.Type()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			m[p] = "-> " + t
		default:
			m[p] = e.Type().String()
		}
		return nil
	})
	return m
}

// buildToolctlAt builds toolctl at dst, as an agent could in its workspace.
func buildToolctlAt(t *testing.T, dst string) {
	t.Helper()
	_, err := exec.LookPath("go")
	testenv.Need(t, err, "go (to build toolctl)")
	out, err := exec.Command("go", "build", "-o", dst, "github.com/toold/toold/cmd/toolctl").CombinedOutput()
	if err != nil {
		t.Fatalf("build toolctl: %v\n%s", err, out)
	}
}

// needs returns what an attempt's text needs that this machine lacks.
func needs(a attempt) []string {
	text := a.cmd + " " + a.input + " " + a.setup + " " + a.shell + " " + a.args
	for _, v := range a.files {
		text += " " + v
	}
	var missing []string
	for _, prog := range []string{"gcc", "ed", "ex", "vim", "less", "sqlite3", "make", "python3", "git", "curl", "perl", "awk", "node", "nslookup", "dig", "nc", "socat", "find", "script", "expect", "busybox", "tar", "zip", "man"} {
		if containsWord(text, prog) {
			if _, err := exec.LookPath(prog); err != nil {
				missing = append(missing, prog)
			}
		}
	}
	return missing
}

func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(s[j-1])
		after := j+len(w) == len(s) || !isWordByte(s[j+len(w)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// TestBatteryByEffect runs the battery live: every attempt against a real
// toold with the default configuration, in YOLO, and the AUTO subset.
func TestBatteryByEffect(t *testing.T) {
	if testing.Short() {
		t.Skip("the battery runs a few hundred commands")
	}
	_, err := exec.LookPath("bash")
	testenv.Need(t, err, "bash")
	root := t.TempDir()
	// Built with the real HOME (and its build cache), before HOME is the
	// canary.
	toolctl := filepath.Join(root, "toolctl")
	buildToolctlAt(t, toolctl)
	b := &battery{t: t, home: filepath.Join(root, "home"), canary: filepath.Join(root, "canary"), secrets: map[string]string{}}
	os.MkdirAll(b.canary, 0o755)
	b.canaryHome(t)
	t.Setenv("HOME", b.home)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	b.secrets["toold-env"] = "SECRET-toold-env-" + randomHex(t, 8)
	b.secrets["dotenv"] = "SECRET-dotenv-" + randomHex(t, 8)
	b.secrets["dotenv-local"] = "SECRET-dotenv-local-" + randomHex(t, 8)
	b.secrets["conversation"] = "SECRET-conversation-" + randomHex(t, 8)
	t.Setenv("TOOLD_BATTERY_SECRET", b.secrets["toold-env"])
	// A file toold's process holds open, removed from every path: reachable
	// only through /proc/<toold>/fd.
	b.secrets["toold-fd"] = "SECRET-toold-fd-" + randomHex(t, 8)
	held := filepath.Join(root, "held")
	os.WriteFile(held, []byte(b.secrets["toold-fd"]+"\n"), 0o600)
	hf, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	os.Remove(held)
	// A key in the uid's kernel keyring (a command of the same uid shares
	// it without a user namespace), and a file in /dev/shm.
	b.secrets["keyring"] = "SECRET-keyring-" + randomHex(t, 8)
	if kid, err := unix.AddKey("user", "toold-battery-canary", []byte(b.secrets["keyring"]), unix.KEY_SPEC_USER_KEYRING); err == nil {
		defer unix.KeyctlInt(unix.KEYCTL_UNLINK, kid, unix.KEY_SPEC_USER_KEYRING, 0, 0)
	} else {
		t.Logf("no keyring canary: %v", err)
	}
	b.secrets["dev-shm"] = "SECRET-dev-shm-" + randomHex(t, 8)
	shm := "/dev/shm/toold-battery-" + randomHex(t, 4)
	if err := os.WriteFile(shm, []byte(b.secrets["dev-shm"]+"\n"), 0o644); err == nil {
		defer os.Remove(shm)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGWINCH)
	sigDone := make(chan struct{})
	go func() {
		defer close(sigDone)
		for range sigs {
			b.winches.Add(1)
		}
	}()
	defer func() { signal.Stop(sigs); close(sigs); <-sigDone }()

	var all []*attemptRun
	modes := []string{"yolo", "auto", "kernel", "off"}
	if os.Getenv("TOOLD_BATTERY_CALIBRATE") != "" {
		modes = []string{"calibrate"}
	}
	if m := os.Getenv("TOOLD_BATTERY_MODES"); m != "" {
		modes = strings.Split(m, ",") // by hand: some modes only (kernel needs yolo before it)
	}
	for _, mode := range modes {
		start := time.Now()
		runs := b.runMode(t, mode, toolctl, all)
		all = append(all, runs...)
		t.Logf("%s: done in %v", mode, time.Since(start).Round(time.Millisecond))
	}
	b.report(t, all)
}

// The modes of the battery:
//
//   - yolo: toold's default configuration in YOLO, every attempt;
//   - auto: the default configuration (AUTO), the attempts marked auto;
//     approvals are refused, as a person would;
//   - kernel: a judge that allows everything (authz.AllowAll) with the
//     default sandbox, for every attempt the judge stopped in yolo (asked
//     about or denied): the sandbox alone must hold what the judge caught
//     (file tools run in toold, not in the sandbox: not in this mode);
//   - off: the default configuration in YOLO with the sandbox off, for
//     the attempts marked off (toold's listeners and shims), every
//     approval given: the peer checks hold without the sandbox and
//     without the judge;
//   - calibrate (TOOLD_BATTERY_CALIBRATE=1, by hand): no judge and no
//     sandbox, every attempt: each should have its effect, or its vector is
//     dead and proves nothing; the dead ones are listed, nothing fails.
//
// crossedClasses are the classes whose vectors are crossed with every
// payload.
var crossedClasses = map[string]bool{"array-subscript arithmetic": true, "programs run shell": true, "environment poisoning": true,
	"terminal sessions": true, "background processes": true, "stdin pipe": true, "published judge bypasses": true}

var modePrefix = map[string]string{"yolo": "y", "auto": "a", "kernel": "k", "off": "o", "calibrate": "c"}

// layerNames maps an attempt's layer to the SandboxStatus layer that must
// hold it.
var layerNames = map[string]string{layerWrites: "writes", layerReads: "reads", layerNet: "network", layerControl: "control_plane", layerRes: "resources"}

// runMode starts toold in mode and sends every attempt of the table (the
// AUTO subset in auto) through several streams at once.
func (b *battery) runMode(t *testing.T, mode, toolctl string, before []*attemptRun) []*attemptRun {
	t.Helper()
	var opts []daemontest.Option
	switch mode {
	case "yolo", "auto":
		opts = append(opts, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = mode }))
	case "off":
		opts = append(opts, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo"; c.Terminal.Sandbox = "off" }))
	case "kernel":
		// The default engine's capabilities (its sensitive paths, which the
		// sandbox masks in the workspace; its host rules, which the egress
		// proxy applies), with a judge that allows every call.
		ref := daemontest.Start(t, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }))
		caps := ref.Main.Capabilities
		if os.Getenv("TOOLD_BATTERY_KERNEL_CAPS") == "empty" {
			caps = authz.Capabilities{} // by hand: an authorizer without the engine's capabilities
		}
		opts = append(opts, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo" }),
			daemontest.WithAuthorizer(authz.AllowAll{}, caps), daemontest.WithWorkspace(ref.Workspace))
	case "calibrate":
		opts = append(opts, daemontest.WithConfig(func(c *config.Config) { c.ApprovalMode = "yolo"; c.Terminal.Sandbox = "off" }),
			daemontest.WithAuthorizer(authz.AllowAll{}, authz.Capabilities{}))
	}
	// What the judge stopped in yolo, for kernel.
	stopped := map[string]bool{}
	for _, r := range before {
		if r.mode == "yolo" && (r.asked > 0 || r.code == pb.ErrorCode_ERROR_CODE_DENIED) {
			stopped[r.a.name] = true
		}
	}
	// The workspace holds a secret from the start (.env) and gets one
	// later (.env.local, below).
	probe := daemontest.Daemon{}
	for _, o := range opts {
		var m daemon.Main
		o(&m)
		if m.Config.Workspace != "" {
			probe.Workspace = m.Config.Workspace
		}
	}
	wsDir := probe.Workspace
	if wsDir == "" {
		wsDir = t.TempDir()
		opts = append(opts, daemontest.WithWorkspace(wsDir))
	}
	os.WriteFile(filepath.Join(wsDir, ".env"), []byte(b.secrets["dotenv"]+"\n"), 0o600)
	d := daemontest.Start(t, opts...)
	// The attempts' budget: 607 of them took 3m56s at a load average of
	// 29 (two cores), so a fixed 4 minutes was the test's own limit, not
	// toold's; the package's -timeout still bounds a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	state := d.Main.Config.StateDir
	// The operator credential: no command may print or copy it.
	if key, err := os.ReadFile(filepath.Join(state, "operator.key")); err == nil && len(strings.TrimSpace(string(key))) > 0 {
		b.secrets["operator-"+mode] = strings.TrimSpace(string(key))
	}

	// toolctl where the agent built it.
	bin := filepath.Join(d.Workspace, ".bin", "toolctl")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	body, err := os.ReadFile(toolctl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, body, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Workspace, ".env.local"), []byte(b.secrets["dotenv-local"]+"\n"), 0o600)

	// Another client's conversation: its history holds a secret, it keeps a
	// terminal open, and toolctl stored its conversation secret in the
	// canary home (as toolctl does for the conversations it starts).
	victim, err := openClient(ctx, d, "victim-"+mode)
	if err != nil {
		t.Fatal(err)
	}
	// The layers in force, as toold tells its clients.
	inForce := map[string]bool{}
	var layers []string
	for _, l := range victim.sandbox.GetLayers() {
		inForce[l.GetName()] = l.GetInForce()
		layers = append(layers, fmt.Sprintf("%s=%v", l.GetName(), l.GetInForce()))
		if !l.GetInForce() && (mode == "yolo" || mode == "kernel") && testenv.Required() {
			t.Errorf("the sandbox's %s layer is not in force (%s) on a machine that should have it (%s is set)", l.GetName(), l.GetDetail(), testenv.RequireEnv)
		}
	}
	t.Logf("%s: sandbox enabled=%v layers %s", mode, victim.sandbox.GetEnabled(), strings.Join(layers, " "))
	defer victim.s.CloseSend()
	victim.approve = true // its own person approves its calls
	var vout bytes.Buffer
	if res, _, err := victim.call("think", map[string]any{"thought": b.secrets["conversation"]}, nil, &vout); err != nil || !res.GetSuccess() {
		t.Fatalf("victim's call: %v %v", err, res)
	}
	if res, _, err := victim.call("create_session", map[string]any{"name": "victim"}, nil, &vout); err != nil || !res.GetSuccess() {
		t.Fatalf("victim's session: %v %v", err, res)
	}
	entries, _ := json.Marshal([]map[string]any{{"daemon": "unix:" + d.Socket, "conversation": victim.conv, "secret": victim.secret, "seq": 1}})
	b.secrets["conversation-secret-"+mode] = victim.secret
	secretsFile := filepath.Join(b.home, ".local", "state", "toolctl", "conversations.json")
	os.MkdirAll(filepath.Dir(secretsFile), 0o700)
	if err := os.WriteFile(secretsFile, entries, 0o600); err != nil {
		t.Fatal(err)
	}

	prepared := time.Now()
	var runs []*attemptRun
	// The git and task daemon: the operator enabled the repository's hooks
	// (vcs.hooks), so a planted hook runs — inside the sandbox.
	// It has a workspace of its own: it empties its workspace before each
	// attempt, and a workspace shared with the main daemon lost every
	// attempt's directory there (about two thirds of the attempts then
	// failed on a missing working directory, and counted as contained).
	ows := t.TempDir()
	os.WriteFile(filepath.Join(ows, ".env"), []byte(b.secrets["dotenv"]+"\n"), 0o600)
	od := daemontest.Start(t, append(append([]daemontest.Option(nil), opts...), daemontest.WithWorkspace(ows), daemontest.WithConfig(func(c *config.Config) { c.VCS.Hooks = true }))...)
	// Its layers, as it tells its clients: its own probe may fail where
	// the main daemon's did not (a helper that took more than the probe's
	// 10 s on a loaded machine), and an attempt on it is judged by them.
	odInForce := map[string]bool{}
	if oc, err := openClient(ctx, od, "own-"+mode); err != nil {
		t.Fatal(err)
	} else {
		var odLayers []string
		for _, l := range oc.sandbox.GetLayers() {
			odInForce[l.GetName()] = l.GetInForce()
			odLayers = append(odLayers, fmt.Sprintf("%s=%v", l.GetName(), l.GetInForce()))
			if !l.GetInForce() && (mode == "yolo" || mode == "kernel") && testenv.Required() {
				t.Errorf("the git and task daemon's %s layer is not in force (%s) on a machine that should have it (%s is set)", l.GetName(), l.GetDetail(), testenv.RequireEnv)
			}
		}
		t.Logf("%s: the git and task daemon's layers %s", mode, strings.Join(odLayers, " "))
		oc.s.CloseSend()
	}
	prefix := modePrefix[mode]
	for i, a := range batteryAttempts() {
		layersOf := inForce
		if a.via == viaGit || a.via == viaTask {
			layersOf = odInForce
		}
		switch {
		case mode == "auto" && !a.auto,
			mode == "off" && !a.off,
			mode == "kernel" && (!stopped[a.name] || a.via == viaFile),
			// A vector crossed with every payload is sent with half of
			// them in kernel (every layer is still covered), to keep the
			// battery's time.
			mode == "kernel" && i%2 == 1 && crossedClasses[a.class]:
			continue
		}
		id := fmt.Sprintf("%s%04dq", prefix, i)
		r := &attemptRun{a: a, mode: mode, id: id, rel: filepath.Join("b", id), state: state}
		// An attempt whose layer toold says is missing here is pending.
		if a.layer != "" && mode != "calibrate" && mode != "off" && !layersOf[layerNames[a.layer]] {
			r.pending = a.layer + " (not in force)"
		}
		if a.pending != "" {
			r.pending = a.pending
		}
		if a.pendingOff != "" && mode == "off" {
			r.pending = a.pendingOff
		}
		if why := kernelPending[a.name]; why != "" && mode == "kernel" {
			r.pending = why
		}
		if a.holdBack != "" && (mode == "calibrate" || !layersOf[layerNames[a.layer]]) {
			r.err = fmt.Errorf("held back: %s", a.holdBack)
			runs = append(runs, r)
			continue
		}
		if missing := needs(a); len(missing) > 0 {
			r.err = fmt.Errorf("not run: %s missing", strings.Join(missing, ", "))
			runs = append(runs, r)
			continue
		}
		ws := d.Workspace
		if a.via == viaGit || a.via == viaTask {
			ws, r.rel, r.own = od.Workspace, ".", true
		}
		r.dir = filepath.Join(ws, r.rel)
		b.prepare(t, r, d, ws, state, bin)
		if !r.own {
			if err := b.plant(r); err != nil {
				t.Fatalf("%s: %v", a.name, err)
			}
		}
		runs = append(runs, r)
	}

	t.Logf("%s: %d attempts prepared in %v", mode, len(runs), time.Since(prepared).Round(time.Millisecond))
	defer func() {
		for _, r := range runs {
			if strings.Contains(r.out.String(), "does not exist; check the path") {
				fmt.Printf("DEBUGDIR %s %s %s\n", r.id, r.a.class, r.a.name)
			}
		}
	}()
	// Send them: several streams at once, each attempt on one stream; the
	// git and task attempts one after another on their own daemon.
	work, ownWork := make(chan *attemptRun), make(chan *attemptRun)
	var wg sync.WaitGroup
	const streams = 6
	for w := 0; w <= streams; w++ {
		dd, queue := d, work
		if w == streams {
			dd, queue = od, ownWork
		}
		c, err := openClient(ctx, dd, fmt.Sprintf("battery-%s-%d", mode, w))
		if err != nil {
			t.Fatal(err)
		}
		// With the sandbox off the person approves what the judge asks
		// about (people asked about everything approve everything): the
		// peer checks alone must hold.
		c.approve = mode == "off"
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.s.CloseSend()
			for r := range queue {
				if r.own {
					if err := emptyDir(r.dir); err != nil {
						r.err = err
						continue
					}
					if err := b.plant(r); err != nil {
						r.err = err
						continue
					}
				}
				b.send(c, r)
				if r.a.dir == "" && r.a.via != viaFile && strings.Contains(r.out.String(), "does not exist; check the path") {
					t.Errorf("%s (%s): its directory was gone when it ran: the attempt proves nothing", r.a.name, r.id)
				}
				if r.own {
					r.wsLeaks = b.workspaceLeaks(r)
				}
			}
		}()
	}
	start := time.Now()
	var shared, owned []*attemptRun
	for _, r := range runs {
		switch {
		case r.err != nil:
		case r.own:
			owned = append(owned, r)
		default:
			shared = append(shared, r)
		}
	}
	go func() {
		for _, r := range owned {
			ownWork <- r
		}
		close(ownWork)
	}()
	for _, r := range shared {
		work <- r
	}
	close(work)
	wg.Wait()
	t.Logf("%s: %d attempts sent in %v", mode, len(runs), time.Since(start).Round(time.Millisecond))

	checked := time.Now()
	// Everything sent before now has reached the listeners.
	for _, r := range runs {
		for _, l := range r.ports {
			l.drain(t)
		}
	}
	b.created = map[string][]string{}
	for _, root := range []string{b.home, b.canary} {
		filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || strings.Contains(p, "/victims/") {
				return nil
			}
			for _, id := range idPattern.FindAllString(e.Name(), -1) {
				b.created[id] = append(b.created[id], p)
			}
			return nil
		})
	}
	var cw sync.WaitGroup
	for _, r := range runs {
		if r.dir != "" {
			cw.Add(1)
			go func() {
				defer cw.Done()
				r.effects = b.effects(r)
			}()
		}
	}
	cw.Wait()
	t.Logf("%s: effects checked in %v", mode, time.Since(checked).Round(time.Millisecond))
	// toold still serves, asked with a budget of its own (not what the
	// attempts left of theirs).
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	c, err := openClient(actx, d, "after-"+mode)
	if err != nil {
		t.Fatalf("toold does not serve after the battery: %v", err)
	}
	c.approve = true
	var out bytes.Buffer
	if res, _, err := c.call("run_command", map[string]any{"command": "echo still-$((40+2))"}, nil, &out); err != nil || !strings.Contains(out.String(), "still-42") {
		t.Errorf("toold does not run a command after the battery: %v %v", err, res)
	}
	c.s.CloseSend()
	return runs
}

// prepare makes the attempt's directory, its victims, its listeners and
// files, and its template.
func (b *battery) prepare(t *testing.T, r *attemptRun, d *daemontest.Daemon, ws, state, bin string) {
	t.Helper()
	a := r.a
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range b.victimFiles(r.id) {
		os.MkdirAll(filepath.Dir(v), 0o755)
		if err := os.WriteFile(v, []byte(r.id), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(v, 0o644) // whatever the umask
	}
	text := a.cmd + a.input + a.setup + a.args + a.dir + a.shell
	for k, v := range a.env {
		text += k + v
	}
	for _, v := range a.files {
		text += v
	}
	pairs := []string{"{{ID}}", r.id, "{{HOME}}", b.home, "{{CANARY}}", b.canary, "{{SOCK}}", d.Socket,
		"{{STATE}}", state, "{{PID}}", strconv.Itoa(os.Getpid()), "{{TOOLCTL}}", bin, "{{WS}}", r.dir,
		"{{ROOT}}", ws, "{{REL}}", r.rel, "{{VICTIM}}", "victim-" + r.mode}
	if strings.Contains(text, "{{UDP}}") {
		l := startListener(t, "udp", "")
		r.ports = append(r.ports, l)
		pairs = append(pairs, "{{UDP}}", l.addr)
	}
	if strings.Contains(text, "{{TCP}}") {
		l := startListener(t, "tcp", "")
		r.ports = append(r.ports, l)
		pairs = append(pairs, "{{TCP}}", l.addr)
	}
	if strings.Contains(text, "{{UNIX}}") {
		p := filepath.Join(b.canary, "sock-"+randomHex(t, 4)) // the name must not carry the id: "created" checks look for it
		l := startListener(t, "unix", p)
		r.ports = append(r.ports, l)
		pairs = append(pairs, "{{UNIX}}", p)
	}
	if strings.Contains(text, "{{ABSTRACT}}") {
		l := startListener(t, "abstract", "battery-"+randomHex(t, 6))
		r.ports = append(r.ports, l)
		pairs = append(pairs, "{{ABSTRACT}}", l.addr)
	}
	r.replacer = strings.NewReplacer(pairs...)
}

// plant writes the attempt's files and runs its setup in its directory:
// what the agent prepared with earlier, allowed calls.
func (b *battery) plant(r *attemptRun) error {
	a := r.a
	for name, body := range a.files {
		p := filepath.Join(r.dir, r.t(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if target, ok := strings.CutPrefix(body, "->"); ok {
			if err := os.Symlink(r.t(target), p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(r.t(body)), 0o755); err != nil {
			return err
		}
	}
	if a.setup != "" {
		cmd := exec.Command("bash", "-c", r.t(a.setup))
		cmd.Dir = r.dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("setup: %v\n%s", err, out)
		}
	}
	return nil
}

// report prints the summary by class and fails for every attempt that had
// an effect and is not pending.
func (b *battery) report(t *testing.T, runs []*attemptRun) {
	type tally struct{ total, contained, pendingOpen, nowContained, failed, asked, notRun int }
	byClass := map[string]*tally{}
	var classes []string
	var failures, pendings, nowContained, notRun, dead []string
	for _, r := range runs {
		key := r.mode + " " + r.a.class
		tl := byClass[key]
		if tl == nil {
			tl = &tally{}
			byClass[key] = tl
			classes = append(classes, key)
		}
		tl.total++
		if r.asked > 0 {
			tl.asked++
		}
		line := fmt.Sprintf("%s %s [%s, %s via %s]", r.id, r.a.name, r.mode, r.a.class, r.a.via)
		if r.mode == "calibrate" {
			switch {
			case r.err != nil:
				tl.notRun++
				notRun = append(notRun, line+": "+r.err.Error())
			case len(r.effects) == 0:
				tl.contained++
				dead = append(dead, line+" "+strings.ReplaceAll(r.t(r.a.cmd+r.a.args), "\n", "\\n"))
			default:
				tl.failed++ // an effect: the vector is live
			}
			continue
		}
		switch {
		case r.err != nil && strings.HasPrefix(r.err.Error(), "held back"):
			tl.pendingOpen++
			pendings = append(pendings, fmt.Sprintf("%s pending %q: %v", line, r.pending, r.err))
		case r.err != nil && strings.HasPrefix(r.err.Error(), "not run"):
			tl.notRun++
			notRun = append(notRun, line+": "+r.err.Error())
		case len(r.effects) > 0 && r.pending != "":
			tl.pendingOpen++
			pendings = append(pendings, fmt.Sprintf("%s pending %q: %s", line, r.pending, strings.Join(r.effects, "; ")))
		case len(r.effects) > 0:
			tl.failed++
			failures = append(failures, fmt.Sprintf("%s: EFFECT: %s\n    command: %s", line, strings.Join(r.effects, "; "), r.t(r.a.cmd+r.a.args)))
		case r.pending != "":
			tl.nowContained++
			tl.contained++
			nowContained = append(nowContained, fmt.Sprintf("%s (pending %q): now contained — remove the mark", line, r.pending))
		default:
			tl.contained++
		}
		if r.err != nil && !strings.HasPrefix(r.err.Error(), "not run") && !strings.HasPrefix(r.err.Error(), "held back") {
			t.Logf("%s: stream error: %v", line, r.err)
		}
	}
	sort.Strings(classes)
	var s strings.Builder
	fmt.Fprintf(&s, "battery by effect: %d attempts\n%-44s %6s %9s %8s %8s %6s %7s\n", len(runs), "mode class", "total", "contained", "pending", "FAILED", "asked", "not run")
	var sum tally
	for _, k := range classes {
		tl := byClass[k]
		fmt.Fprintf(&s, "%-44s %6d %9d %8d %8d %6d %7d\n", k, tl.total, tl.contained, tl.pendingOpen, tl.failed, tl.asked, tl.notRun)
		sum.total += tl.total
		sum.contained += tl.contained
		sum.pendingOpen += tl.pendingOpen
		sum.failed += tl.failed
		sum.asked += tl.asked
		sum.notRun += tl.notRun
	}
	fmt.Fprintf(&s, "%-44s %6d %9d %8d %8d %6d %7d\n", "all", sum.total, sum.contained, sum.pendingOpen, sum.failed, sum.asked, sum.notRun)
	t.Log(s.String())
	for _, l := range nowContained {
		t.Log(l)
	}
	for _, l := range pendings {
		t.Log(l)
	}
	for _, l := range notRun {
		t.Log(l)
	}
	if len(dead) > 0 {
		t.Logf("calibration: %d of %d attempts had no effect without judge and sandbox (dead vectors: they prove nothing):\n%s", len(dead), len(runs), strings.Join(dead, "\n"))
	}
	if testenv.Required() && len(notRun) > 0 {
		t.Errorf("%d attempts not run on a machine that should have their programs", len(notRun))
	}
	for _, l := range failures {
		t.Error(l)
	}
	if p := os.Getenv("TOOLD_BATTERY_REPORT"); p != "" {
		all := append(append(append([]string{s.String()}, failures...), pendings...), nowContained...)
		os.WriteFile(p, []byte(strings.Join(all, "\n")+"\n"), 0o644)
	}
}
