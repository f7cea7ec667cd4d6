package sandbox_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/sandbox"
	"github.com/toold/toold/pkg/testenv"
)

// TestIsolatedKernelSurfaces: inside the sandbox the uid's kernel keyring
// (shared with the host: a key the test stored there) is out of reach and
// cannot be added to, a user namespace cannot be made, and io_uring,
// userfaultfd, bpf and perf_event_open are refused; ordinary processes
// still start (clone3 falls back to clone). The same with Landlock only
// (no namespaces: the filter is installed where Landlock is applied).
func TestIsolatedKernelSurfaces(t *testing.T) {
	isolation(t)
	_, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	c := newCanaries(t)
	kid, err := unix.AddKey("user", "toold-sandbox-canary", []byte(secret), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Skipf("add_key on the host: %v", err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_UNLINK, kid, unix.KEY_SPEC_USER_KEYRING, 0, 0)
	for _, isolate := range []bool{true, false} {
		pol := c.policy()
		pol.Isolate = isolate // false: Landlock only (no namespaces)
		kernelSurfaces(t, c, pol, isolate)
	}
}

func kernelSurfaces(t *testing.T, c canaries, pol *sandbox.Policy, isolate bool) {
	_, out := run(t, context.Background(), c.spec(pol), `python3 - <<'EOF'
import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
sc = libc.syscall
sc.restype = ctypes.c_long
buf = ctypes.create_string_buffer(4096)
kid = sc(249, b"user", b"toold-sandbox-canary", None, ctypes.c_long(-4))
if kid > 0:
    n = sc(250, 11, ctypes.c_long(kid), buf, 4096)
    print("REACHED request_key", buf.raw[:max(n, 0)])
if sc(248, b"user", b"toold-sandbox-added", b"x", 1, ctypes.c_long(-4)) > 0:
    print("REACHED add_key")
if libc.unshare(0x10000000) == 0:
    print("REACHED unshare(CLONE_NEWUSER)")
if sc(425, 8, ctypes.create_string_buffer(120)) >= 0:
    print("REACHED io_uring_setup")
if sc(323, 1) >= 0:
    print("REACHED userfaultfd")
if sc(321, 0, ctypes.create_string_buffer(64), 64) >= 0:
    print("REACHED bpf")
print(subprocess.run(["echo", "spawned"], capture_output=True, text=True).stdout.strip())
EOF`)
	if strings.Contains(out, "REACHED") || strings.Contains(out, secret) {
		t.Errorf("isolate=%v: a kernel surface was reached inside the sandbox:\n%s", isolate, out)
	}
	if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "toold-sandbox-added", 0); err == nil {
		unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
		t.Errorf("isolate=%v: the sandbox added a key to the host's user keyring", isolate)
	}
	if !strings.Contains(out, "spawned") {
		t.Errorf("isolate=%v: a process could not start a child in the sandbox:\n%s", isolate, out)
	}
}
