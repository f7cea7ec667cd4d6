package sandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/testenv"
)

// TestUnixGuardOffsets: the members the BPF LSM program reads are found in
// the running kernel's BTF (nested and anonymous members included), and the
// program assembles for both hooks and both kinds of hierarchy. It runs
// where the program cannot be loaded, too: a kernel whose BTF lacks a
// member fails here, not only on a machine with BPF LSM.
func TestUnixGuardOffsets(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		testenv.Need(t, err, "kernel BTF")
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: unixTargetPath, MaxEntries: 1})
	if err != nil {
		testenv.Need(t, err, "BPF maps")
	}
	defer m.Close()
	for _, ctrl := range []string{"", "pids", "memory"} {
		o, err := unixOffsetsOf(spec, ctrl)
		if err != nil {
			t.Fatalf("%q: %v", ctrl, err)
		}
		if (ctrl == "") != (o.cssetSubsys < 0) {
			t.Fatalf("%q: css_set.subsys offset %d", ctrl, o.cssetSubsys)
		}
		// Members that are never first in their structure.
		for name, off := range map[string]int16{"sock net": o.sockNet, "task nsproxy": o.taskNsproxy, "task cgroups": o.taskCgroups, "cgroup kn": o.cgroupKn} {
			if off <= 0 || off%8 != 0 {
				t.Errorf("%q: %s at %d: not an aligned pointer past the start", ctrl, name, off)
			}
		}
		for _, h := range unixHooks {
			ins, err := unixProgram(o, h, m)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(ins); n < 20 || n > 4096 {
				t.Fatalf("%s: %d instructions", h.name, n)
			}
		}
	}
	if _, err := memberOffset(spec, "sock", "__sk_common.no_such_member"); err == nil {
		t.Fatal("a missing member was found")
	}
}

// TestUnixGuardDecision runs the guard's decision (unixDecision, the body
// of the BPF LSM program) live in the kernel where the LSM hooks cannot be
// used: on the sock_send_length tracepoint (a BTF raw tracepoint, which
// every kernel with BTF loads), for each send on a connected unix socket,
// with the sending socket and its peer — the arguments the LSM hooks get —
// and records the verdict by the sending process and the send's length
// (the tracepoint is the whole machine's: another instance of this test,
// in another test binary, sends the same lengths from its own processes).
// So the program's loads are
// accepted by the verifier on this kernel, and what it decides is checked
// on real processes:
//
//   - a sandboxed command in a toold slot that sends to a socket bound
//     outside the sandbox: deny;
//   - the same command sending on a socket of its own (bound in the
//     workspace): allow;
//   - a process outside the sandbox sending to the outside socket: allow;
//   - a sandboxed command that is not in toold's cgroups (as a container's
//     process would be, another network namespace and all) sending to the
//     outside socket: allow — the program holds toold's commands only.
func TestUnixGuardDecision(t *testing.T) {
	if err := ProbeIsolation(Runner{Args: TestHelperArgs}); err != nil {
		testenv.Need(t, err, "namespaces for the sandbox")
	}
	py, err := exec.LookPath("python3")
	testenv.Need(t, err, "python3")
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		testenv.Need(t, err, "kernel BTF")
	}
	lim, err := OpenLimits(256, 512<<20)
	if err != nil {
		testenv.Need(t, err, "cgroup pids and memory controllers")
	}
	defer lim.Close()
	dir, _, ctrl, err := guardHierarchy(lim)
	if err != nil {
		t.Fatal(err)
	}
	o, err := unixOffsetsOf(spec, ctrl)
	if err != nil {
		t.Fatal(err)
	}
	peerOff, err := memberOffset(spec, "unix_sock", "peer")
	if err != nil {
		t.Fatal(err)
	}
	targets, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: unixTargetPath, MaxEntries: 8})
	if err != nil {
		testenv.Need(t, err, "BPF maps")
	}
	defer targets.Close()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	var val [unixTargetPath]byte
	copy(val[:], dir)
	if err := targets.Put(st.Ino, val); err != nil {
		t.Fatal(err)
	}
	// Keyed by tgid<<32 | i: the verdict of a send of base+i bytes by the
	// process tgid (the host's pid), so no other process of the machine
	// writes a verdict the test reads. Room for other processes' sends of
	// those lengths, which the test ignores.
	verdicts, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer verdicts.Close()

	// Sends of base+i bytes record their verdict at (sender, i).
	const base = 61170
	decide, err := unixDecision(o, targets, "deny", "allow")
	if err != nil {
		t.Fatal(err)
	}
	vmap := asm.LoadMapPtr(asm.R1, 0)
	if err := vmap.AssociateMap(verdicts); err != nil {
		t.Fatal(err)
	}
	in := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		ld(asm.R8, asm.R6, 8), // ret: the bytes sent
		asm.Mov.Reg32(asm.R8, asm.R8),
		asm.Sub.Imm(asm.R8, base),
		asm.JGE.Imm(asm.R8, 16, "out"),
		ld(asm.R1, asm.R6, 0),
		asm.FnSkcToUnixSock.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		ld(asm.R3, asm.R0, peerOff),
		asm.JEq.Imm(asm.R3, 0, "out"),
		ld(asm.R2, asm.R6, 0),
	}
	in = append(in, decide...)
	in = append(in,
		asm.Mov.Imm(asm.R9, 1).WithSymbol("deny"),
		asm.Ja.Label("record"),
		asm.Mov.Imm(asm.R9, 2).WithSymbol("allow"),
		asm.FnGetCurrentPidTgid.Call().WithSymbol("record"), // tgid<<32 | tid
		asm.RSh.Imm(asm.R0, 32),
		asm.LSh.Imm(asm.R0, 32),
		asm.Or.Reg(asm.R0, asm.R8),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.StoreMem(asm.RFP, -16, asm.R9, asm.DWord),
		vmap,
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sock_send_length",
		License: "GPL", Instructions: in,
	})
	if err != nil {
		t.Fatalf("the decision does not load on this kernel: %v", err)
	}
	defer prog.Close()
	tp, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()

	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Datagram sockets: the peer of a connected datagram socket is the
	// socket it was connected to (a connected stream socket's peer is the
	// server's end made for it, in the client's namespace; the LSM hook
	// gets the listening socket itself).
	sock := filepath.Join(outside, "agent.sock")
	pc, err := net.ListenPacket("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	script := `import socket, sys, os
def send(path, n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.connect(path)
    s.send(b"x" * n)
send(sys.argv[1], int(sys.argv[2]))
if len(sys.argv) > 3:
    own = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    own.bind("own.sock")
    send("own.sock", int(sys.argv[3]))
    print(own.recv(10000) and "own ok")
print("done")
`
	// run returns the host's pid of the python3 it ran: the sender.
	run := func(slot *Slot, args ...string) uint64 {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		sp := Spec{Dir: ws, Path: py, Args: append([]string{"python3", "-c", script, sock}, args...),
			Env: []string{"PATH=" + os.Getenv("PATH")}, Grace: 500 * time.Millisecond,
			// Datagram sockets: without the seccomp supervisor, which
			// refuses them (the program's decision alone is tested).
			Policy: &Policy{Isolate: true, Writable: []string{ws}, NoUnixSupervisor: true}}
		p, err := Runner{Args: TestHelperArgs}.Start(context.Background(), sp, Stdio{Stdout: w, Stderr: w, Slot: slot})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		if exit := p.Exit(); exit.Code != 0 || !strings.Contains(string(out), "done") {
			t.Fatalf("exit %s:\n%s", exit, out)
		}
		return uint64(p.Pid())
	}
	slot, err := lim.Take()
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Release()
	inSlot := run(slot, strconv.Itoa(base+1), strconv.Itoa(base+2))
	outsideCgroups := run(nil, strconv.Itoa(base+4))
	c, err := net.Dial("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, base+3)); err != nil {
		t.Fatal(err)
	}
	c.Close()

	const denied, allowed = 1, 2
	for _, c := range []struct {
		name      string
		sender, i uint64
		want      uint64
	}{
		{"a command in a toold slot to a socket outside", inSlot, 1, denied},
		{"a command to its own socket", inSlot, 2, allowed},
		{"a process outside to the socket outside", uint64(os.Getpid()), 3, allowed},
		{"a sandboxed process outside toold's cgroups to the socket outside", outsideCgroups, 4, allowed},
	} {
		var got uint64
		if err := verdicts.Lookup(c.sender<<32|c.i, &got); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s (pid %d): verdict %d, want %d (1 deny, 2 allow, 0 never decided)", c.name, c.sender, got, c.want)
		}
	}
}
