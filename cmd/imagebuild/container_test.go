package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toold/toold/pkg/image"
)

// requirePodman returns the podman and busybox binaries the container test
// drives, installed by `make container-deps`. When TOOLD_REQUIRE_PEERS=1
// (make test) a missing one fails the test; otherwise it skips.
func requirePodman(t *testing.T) (podman, busybox string) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("TOOLD_REQUIRE_PEERS") == "1" {
		fail = t.Fatalf
	}
	var err error
	if podman, err = exec.LookPath("podman"); err != nil {
		fail("podman is not installed (make container-deps): %v", err)
	}
	if _, err = exec.LookPath("runc"); err != nil {
		fail("runc is not installed (make container-deps): %v", err)
	}
	if busybox, err = exec.LookPath("busybox"); err != nil {
		fail("busybox is not installed (make container-deps installs busybox-static): %v", err)
	}
	if os.Getuid() != 0 {
		fail("the container test runs podman as root with a private store; run it as root")
	}
	return podman, busybox
}

// pod is podman on a private store in a temp dir (never the system's),
// configured by testdata/containers.conf.
type pod struct {
	t    *testing.T
	bin  string
	dir  string
	conf string
}

func (p *pod) cmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{
		"--root", filepath.Join(p.dir, "root"), "--runroot", filepath.Join(p.dir, "run"),
		"--tmpdir", filepath.Join(p.dir, "tmp"), "--volumepath", filepath.Join(p.dir, "volumes"),
		"--storage-driver", "vfs",
	}, args...)
	c := exec.CommandContext(ctx, p.bin, full...)
	c.Env = append(os.Environ(), "CONTAINERS_CONF="+p.conf, "XDG_RUNTIME_DIR="+filepath.Join(p.dir, "xdg"))
	return c
}

// run runs podman and returns its stdout; a failure fails the test.
func (p *pod) run(args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	c := p.cmd(ctx, args...)
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		p.t.Fatalf("podman %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// logs returns a container's output (toold logs to stderr, which podman
// logs replays on its stderr).
func (p *pod) logs(name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := p.cmd(ctx, "logs", name).CombinedOutput()
	if err != nil {
		p.t.Fatalf("podman logs %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// buildBinaries builds toold, toolctl and toold-helper static, as the image
// has them (make image also trims paths for reproducibility; the test
// leaves that out so it shares the build cache with the other tests).
func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := exec.Command("go", "build", "-o", dir+"/",
		"github.com/toold/toold/cmd/toold", "github.com/toold/toold/cmd/toolctl", "github.com/toold/toold/cmd/toold-helper",
		"github.com/toold/toold/cmd/imagebuild")
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return dir
}

// The image under a real container runtime, as a sidecar runs: podman
// (runc) with a read-only root, no capabilities, no network and
// no-new-privileges, workspace and socket directories bind-mounted, driven
// from the host with toolctl over the mounted socket.
func TestContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs containers")
	}
	podman, busybox := requirePodman(t)
	conf, err := filepath.Abs("testdata/containers.conf")
	if err != nil {
		t.Fatal(err)
	}
	// Short paths: the socket's must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "toold-ctr")
	if err != nil {
		t.Fatal(err)
	}
	requireConf := filepath.Join(dir, "require.yaml")
	if err := os.WriteFile(requireConf, []byte("terminal:\n  sandbox: require\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &pod{t: t, bin: podman, dir: dir, conf: conf}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = p.cmd(ctx, "rm", "--all", "--force", "--time", "0").Run()
		os.RemoveAll(dir)
	})

	bin := buildBinaries(t)
	toolctl := filepath.Join(bin, "toolctl")
	// The images, built by imagebuild as make image runs it (a binary of
	// its own: in this race-instrumented test, compressing would be slow).
	imagebuild := func(args ...string) string {
		t.Helper()
		c := exec.Command(filepath.Join(bin, "imagebuild"), args...)
		c.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("imagebuild %v: %v\n%s", args, err, out)
		}
		return args[len(args)-1]
	}
	base := imagebuild("-busybox", busybox, "-name", "toold-test-base:busybox", "-o", filepath.Join(dir, "base.tar"))
	scratch := imagebuild("-bin", bin, "-name", "toold-test:scratch", "-version", "test", "-o", filepath.Join(dir, "scratch.tar"))
	withBusybox := imagebuild("-bin", bin, "-base", base, "-name", "toold-test:busybox", "-version", "test", "-o", filepath.Join(dir, "busybox.tar"))
	for _, a := range []string{scratch, withBusybox} {
		if out := p.run("load", "--input", a); !strings.Contains(out, "toold-test:") {
			t.Fatalf("podman load %s: %s", a, out)
		}
	}

	// The image's configuration as podman sees it.
	var inspect []struct {
		Config struct {
			User       string
			Entrypoint []string
			Env        []string
			WorkingDir string
		}
	}
	if err := json.Unmarshal([]byte(p.run("image", "inspect", "toold-test:scratch")), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("image inspect: %v", err)
	}
	ic := inspect[0].Config
	env := strings.Join(ic.Env, " ")
	if ic.User != "65532:65532" || strings.Join(ic.Entrypoint, " ") != "/usr/local/bin/toold" || ic.WorkingDir != "/workspace" ||
		!strings.Contains(env, "TOOLD_SOCKET=/run/toold/toold.sock") || !strings.Contains(env, "TOOLD_LOG_FORMAT=json") {
		t.Fatalf("image config: %+v", ic)
	}

	// run starts a container of tag with a fresh workspace, socket dir and
	// a directory outside the workspace (/outside, writable by toold's
	// user: only the sandbox keeps commands out of it).
	run := func(t *testing.T, name, tag string, env ...string) (ws, sock, outside string) {
		ws, sockDir, outside := filepath.Join(dir, name+"-ws"), filepath.Join(dir, name+"-sock"), filepath.Join(dir, name+"-out")
		for _, d := range []string{ws, sockDir, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, image.UID, image.GID); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"run", "--detach", "--name", name,
			"--read-only", "--cap-drop=ALL", "--network=none", "--security-opt", "no-new-privileges",
			"--volume", ws + ":/workspace", "--volume", sockDir + ":/run/toold", "--volume", outside + ":/outside",
			"--volume", requireConf + ":/etc/toold/require.yaml:ro"}
		for _, e := range env {
			args = append(args, "--env", e)
		}
		p.run(append(args, tag)...)
		return ws, filepath.Join(sockDir, "toold.sock"), outside
	}
	// start runs a container and waits until toold serves.
	start := func(t *testing.T, name, tag string, env ...string) (ws, sock string) {
		ws, sock, _ = run(t, name, tag, env...)
		// health prints SERVING, then the sandbox's layers (in force or
		// MISSING, and why).
		if out, code := ctl(t, toolctl, sock, "--connect-timeout", "30s", "health"); code != 0 || !strings.HasPrefix(out, "SERVING\n") {
			t.Fatalf("health: %d %q\n%s", code, out, p.logs(name))
		}
		return ws, sock
	}

	t.Run("scratch", func(t *testing.T) {
		ws, sock := start(t, "scratch", "toold-test:scratch")
		// No shell: toold serves the file tools and says terminal_operations is off.
		out, code := ctl(t, toolctl, sock, "tools", "--json")
		var list struct {
			Tools       []struct{ Name string }
			Unavailable []struct{ Name, Reason string }
		}
		if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
			t.Fatalf("tools: %d %v\n%s", code, err, out)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		// Unavailable: terminal_operations (no shell), then web_search
		// (no search provider is configured in the image).
		if strings.Join(names, ",") != "think,file_operations,user_collaboration,web_operations,build_and_version_control,memory_operations" || len(list.Unavailable) != 2 ||
			list.Unavailable[0].Name != "terminal_operations" || !strings.Contains(list.Unavailable[0].Reason, "neither bash nor sh") ||
			list.Unavailable[1].Name != "web_search" {
			t.Fatalf("tools without a shell: %v, unavailable %+v", names, list.Unavailable)
		}
		if out, code := ctl(t, toolctl, sock, "call", "run_command", "command=true", "--yes"); code != 1 || !strings.Contains(out, "UNAVAILABLE") {
			t.Fatalf("run_command without a shell: %d %s", code, out)
		}
		checkFiles(t, toolctl, sock, ws)
		checkUID(t, p, "scratch")
		stopped(t, p, "scratch")
		if logs := p.logs("scratch"); !strings.Contains(logs, `"level":"WARN","msg":"tool off","tool":"terminal_operations","reason":"terminal: no shell to run commands`) {
			t.Fatalf("the log does not say terminal_operations is off:\n%s", logs)
		}
	})

	// The layers of the sandbox in this container (non-root, every
	// capability dropped, runc): Landlock holds writes; namespaces are
	// refused (no CAP_SYS_ADMIN; toold makes no user namespace), so reads are missing,
	// and resources with them (the per-command cgroup is the isolated
	// helper's). The network and the control plane hold without them:
	// each command's helper supervises its connects (seccomp user
	// notification, which the container allows, with pidfd_getfd of its
	// own children). health says exactly that, and each layer in force
	// is checked by effect: a write outside, toold's own socket, a UDP
	// socket.
	t.Run("layers", func(t *testing.T) {
		ws, sock, outside := run(t, "layers", "toold-test:busybox")
		out, code := ctl(t, toolctl, sock, "--connect-timeout", "30s", "health")
		if code != 0 || !strings.HasPrefix(out, "SERVING\n") {
			t.Fatalf("health: %d %q\n%s", code, out, p.logs("layers"))
		}
		for _, want := range []string{
			"\nsandbox: writes in force: Landlock ABI ",
			"\nsandbox: reads MISSING: this machine does not let toold create the sandbox's namespaces: ",
			"\nsandbox: network in force: no network namespace (this machine does not let toold create the sandbox's namespaces: ",
			"every connect is made by the command's helper (seccomp supervisor): TCP only to toold's egress proxy at 127.0.0.1:",
			"\nsandbox: control_plane in force: toold's socket and listeners refused to commands by their helper's supervisor",
			"\nsandbox: resources MISSING: ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("health lacks %q:\n%s", want, out)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		// A write outside the workspace the judge cannot follow (the
		// target is a variable), approved: Landlock refuses it.
		canary := filepath.Join(outside, "canary")
		res, _ := ctl(t, toolctl, sock, "call", "--yes", "run_command", `command=d=/outside; echo pwned > "$d/canary"`)
		if _, err := os.Stat(canary); !os.IsNotExist(err) {
			t.Fatalf("a command wrote outside the workspace: %v\n%s", err, res)
		}
		if !strings.Contains(res, "Permission denied") {
			t.Errorf("the refused write does not say why: %s", res)
		}
		// The same write named plainly asks to run outside the sandbox,
		// which --yes never approves.
		res, code = ctl(t, toolctl, sock, "call", "--yes", "run_command", "command=echo pwned > /outside/canary")
		if code != 1 || !strings.Contains(res, "approval needed to run OUTSIDE the sandbox") {
			t.Errorf("a plain write outside: %d %s", code, res)
		}
		if _, err := os.Stat(canary); !os.IsNotExist(err) {
			t.Fatalf("a command wrote outside the workspace: %v\n%s", err, res)
		}
		// toold's own socket, from a command: refused by the command's
		// helper (the supervisor), though the command sees the socket
		// and has toold's uid; toolctl says the connect was refused.
		res, _ = ctl(t, toolctl, sock, "call", "--yes", "run_command",
			`command=d=/run/toold; toolctl --socket "$d/toold.sock" --connect-timeout 3s health; echo status=$?`)
		if strings.Contains(res, "SERVING") || strings.Contains(res, "status=0") || !strings.Contains(res, "connect: operation not permitted") {
			t.Errorf("a command reached toold's socket: %s", res)
		}
		// No UDP socket (and so no datagram out, DNS included).
		res, _ = ctl(t, toolctl, sock, "call", "--yes", "run_command", "command=nslookup toold.invalid 127.0.0.1; echo status=$?")
		if !strings.Contains(res, "Operation not permitted") || strings.Contains(res, "status=0") {
			t.Errorf("a command made a UDP socket: %s", res)
		}
		// Inside the workspace commands write as usual.
		if res, code := ctl(t, toolctl, sock, "call", "--yes", "run_command", `command=d=.; echo fine > "$d/inside"`); code != 0 {
			t.Fatalf("a write inside: %d %s", code, res)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "inside")); err != nil || string(b) != "fine\n" {
			t.Fatalf("inside: %q %v", b, err)
		}
		stopped(t, p, "layers")
	})

	// sandbox: require in this container refuses to run commands: toold
	// does not start, and says which layers are missing (reads,
	// resources) and why.
	t.Run("require", func(t *testing.T) {
		run(t, "require", "toold-test:busybox", "TOOLD_CONFIG=/etc/toold/require.yaml")
		if code := p.run("wait", "require"); code == "0" {
			t.Fatalf("toold with sandbox: require ran in a container without namespaces\n%s", p.logs("require"))
		}
		logs := p.logs("require")
		for _, want := range []string{"the sandbox is required (terminal.sandbox: require) but layers are missing: reads (", "resources ("} {
			if !strings.Contains(logs, want) {
				t.Errorf("the log lacks %q:\n%s", want, logs)
			}
		}
		// The network is not missing: the supervisor holds it.
		if strings.Contains(logs, "network (") {
			t.Errorf("the log says the network layer is missing:\n%s", logs)
		}
	})

	t.Run("busybox", func(t *testing.T) {
		// A long shutdown grace (set the container way, by a TOOLD_*
		// variable), so a loaded machine cannot make the drain below race.
		ws, sock := start(t, "busybox", "toold-test:busybox", "TOOLD_SHUTDOWN_GRACE=90s")
		checkFiles(t, toolctl, sock, ws)
		checkUID(t, p, "busybox")
		out, code := ctl(t, toolctl, sock, "call", "--yes", "run_command", "command=id -u && echo hi > made.txt && cat made.txt")
		if code != 0 || !strings.Contains(out, "65532") || !strings.Contains(out, "hi") {
			t.Fatalf("run_command: %d %s", code, out)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "hi\n" {
			t.Fatalf("made.txt on the host: %q %v", b, err)
		}
		// bash-only syntax is refused under sh (policy judges as bash).
		if out, code := ctl(t, toolctl, sock, "call", "--yes", "run_command", "command=a=(1 2); echo ${a[1]}"); code != 1 || !strings.Contains(out, "INVALID_ARGUMENTS") {
			t.Fatalf("bash-only line: %d %s", code, out)
		}

		// podman stop (SIGTERM) while a command runs: toold drains, the
		// call ends cleanly with its output, the container exits 0.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		call := exec.CommandContext(ctx, toolctl, "--socket", sock, "call", "--yes", "--json", "run_command",
			"command=touch started; while [ ! -e release ]; do sleep 0.05; done; echo released")
		stdout, err := call.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		call.Stderr = &stderr
		if err := call.Start(); err != nil {
			t.Fatal(err)
		}
		var events strings.Builder
		sc := bufio.NewScanner(stdout)
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			for sc.Scan() {
				events.WriteString(sc.Text() + "\n")
			}
		}()
		// The command is running once it made its file.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the command did not start")
			}
		}
		stop := make(chan string, 1)
		go func() {
			var out bytes.Buffer
			c := p.cmd(ctx, "stop", "--time", "120", "busybox")
			c.Stdout, c.Stderr = &out, &out
			err := c.Run()
			stop <- fmt.Sprint(err, out.String())
		}()
		// Draining shows as health NOT_SERVING (podman logs would wait for
		// podman stop's lock on the container).
		deadline := time.Now().Add(time.Minute)
		for {
			out, _ := ctl(t, toolctl, sock, "health")
			if strings.Contains(out, "NOT_SERVING") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("toold did not start draining after podman stop: health %s", out)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := os.WriteFile(filepath.Join(ws, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		<-scanned
		if err := call.Wait(); err != nil || !strings.Contains(events.String(), "released") || !strings.Contains(events.String(), `"success": true`) && !strings.Contains(events.String(), `"success":true`) {
			t.Fatalf("the running call did not end cleanly: %v\n%s\n%s", err, events.String(), stderr.String())
		}
		if res := <-stop; res != "<nil>busybox\n" {
			t.Fatalf("podman stop: %q", res)
		}
		if code := p.run("inspect", "--format", "{{.State.ExitCode}}", "busybox"); code != "0" {
			t.Fatalf("exit code %s\n%s", code, p.logs("busybox"))
		}
		// JSON logs on stderr; the grace came from TOOLD_SHUTDOWN_GRACE.
		if logs := p.logs("busybox"); !strings.Contains(logs, `"msg":"shutting down","grace":90000000000`) {
			t.Fatalf("logs: %s", logs)
		}
	})
}

// ctl runs toolctl against sock and returns its combined output and exit
// status.
func ctl(t *testing.T, toolctl, sock string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, toolctl, append([]string{"--socket", sock}, args...)...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out)), code
}

// checkFiles: read_file and write_file on the mounted workspace; escapes
// out of /workspace are refused and change nothing.
func checkFiles(t *testing.T, toolctl, sock, ws string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, "from-host.txt"), []byte("written on the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := ctl(t, toolctl, sock, "call", "read_file", "path=from-host.txt"); code != 0 || !strings.Contains(out, "written on the host") {
		t.Fatalf("read_file: %d %s", code, out)
	}
	if out, code := ctl(t, toolctl, sock, "call", "--yes", "write_file", "path=sub/from-toold.txt", "content=written by toold"); code != 0 {
		t.Fatalf("write_file: %d %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub", "from-toold.txt")); err != nil || string(b) != "written by toold" {
		t.Fatalf("the host sees %q, %v", b, err)
	}
	// A symlink planted in the workspace that leads out of it.
	if err := os.Symlink("/etc", filepath.Join(ws, "etc-link")); err != nil {
		t.Fatal(err)
	}
	escapes := []struct {
		args []string
		want string
	}{
		{[]string{"read_file", "path=../etc/passwd"}, "REJECTED_BY_USER"},
		{[]string{"read_file", "path=etc-link/passwd"}, "REJECTED_BY_USER"},
		{[]string{"write_file", "path=../escaped.txt", "content=x"}, "REJECTED_BY_USER"},
		// Approved anyway: the root filesystem is read-only.
		{[]string{"--yes", "write_file", "path=/etc/escaped.txt", "content=x"}, "read-only file system"},
		{[]string{"--yes", "write_file", "path=etc-link/escaped.txt", "content=x"}, "read-only file system"},
	}
	for _, e := range escapes {
		if out, code := ctl(t, toolctl, sock, append([]string{"call"}, e.args...)...); code != 1 || !strings.Contains(out, e.want) {
			t.Fatalf("%v: %d %s, want %s", e.args, code, out, e.want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "escaped.txt")); err == nil {
		t.Fatal("a write escaped the workspace")
	}
}

// checkUID: toold runs as uid 65532 (seen from the host's /proc).
func checkUID(t *testing.T, p *pod, name string) {
	t.Helper()
	pid, err := strconv.Atoi(p.run("inspect", "--format", "{{.State.Pid}}", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Uid:") {
			if f := strings.Fields(l); len(f) != 5 || f[1] != "65532" || f[2] != "65532" {
				t.Fatalf("toold runs as %q, want 65532", l)
			}
			return
		}
	}
	t.Fatal("no Uid in /proc status")
}

// stopped stops an idle container: it exits 0.
func stopped(t *testing.T, p *pod, name string) {
	t.Helper()
	p.run("stop", "--time", "60", name)
	if code := p.run("inspect", "--format", "{{.State.ExitCode}}", name); code != "0" {
		t.Fatalf("exit code %s\n%s", code, p.logs(name))
	}
}
