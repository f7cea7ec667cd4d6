package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// UnixGuard holds unix sockets outside the sandbox out of its commands'
// reach in the kernel: a BPF LSM program on the unix_stream_connect and
// unix_may_send hooks (connect of stream and seqpacket sockets; connect and
// every send of datagram sockets) refuses (EPERM) when the calling task runs
// in a command cgroup of a toold (a cgroup below a directory listed in the
// program's map) and the peer socket is not of the caller's network
// namespace — neither the namespace of the caller's socket nor the task's
// own.
//
// The hooks run after the path was resolved, with the peer socket that is
// actually used: a symbolic link, a rename, a relative path, /proc/self/fd
// or a socket bound after the command started all end at the same check,
// and there is no check-then-use race. Who is held is decided by the
// task's cgroup, which a command cannot leave (its view of the cgroup file
// systems is read-only and it has no capabilities); what is reachable, by
// the peer socket's network namespace, which is fixed when the socket is
// made: each sandbox has a network namespace of its own (OpenNetns), so a
// socket a command binds is usable by the commands of that namespace, and
// every socket of the host (or of a container, or another sandbox) is not.
// toold hands no unix socket in: its egress proxy is forwarded over TCP,
// and its warm helpers' socket pairs are seqpacket (no hook on their
// sends). Commands cannot change the map or the program: the sandbox's
// seccomp filter refuses bpf(2), and they cannot make a user (hence a
// network) namespace either.
// A process outside toold's cgroups is never affected, and a process in
// them that talks to a socket of its own network namespace pays four
// loads and a comparison.
//
// The program is written with cilium/ebpf's assembler, and the offsets of
// the kernel's structure members it reads are taken from the running
// kernel's BTF when it is loaded (compile once – run everywhere by hand:
// no C toolchain and nothing binary in the repository).
//
// It is shared by every toold of the host that uses the same cgroup
// hierarchy and pinned in the BPF file system (/sys/fs/bpf/toold-unix-*:
// the two links and the map of command cgroup directories), so a command
// that outlives toold (a background process's shim, when toold was killed)
// stays held; the next toold re-adopts the pins, replacing the program
// with its own (attached before the old one is released: no gap). The last
// toold to close with no command cgroup left releases it.
type UnixGuard struct {
	targets *ebpf.Map
	links   []link.Link
	pinDir  string   // "" when the program is not pinned
	lock    *os.File // the pin directory, flock'ed while it changes
	own     uint64   // this toold's cgroup directory's id in targets
	detail  string
}

// bpfFSMagic is the BPF file system's statfs type.
const bpfFSMagic = 0xcafe4a11

// unixGuardDepth bounds the cgroup ancestors the program looks at: the
// command cgroups are one level below toold's directories, and a command
// cannot make cgroups of its own.
const unixGuardDepth = 16

// unixTargetPath is the value size of the targets map: the cgroup
// directory's path, to prune entries whose directory is gone.
const unixTargetPath = 256

// GuardUnixSockets loads (or re-adopts) the program and adds l's cgroup
// directory to the cgroups it holds. It needs root (CAP_BPF, CAP_PERFMON and
// CAP_SYS_ADMIN to attach an LSM program), a kernel with BPF LSM enabled
// ("bpf" in /sys/kernel/security/lsm) that lets it load a program, and BTF.
// Its error says why the kernel cannot hold unix sockets here; nothing is
// left behind then. It mounts the BPF file system at /sys/fs/bpf when
// none is (as systemd does at boot), to pin the program.
func GuardUnixSockets(l *Limits) (*UnixGuard, error) {
	if l == nil || len(l.dirs) == 0 {
		return nil, errors.New("no per-command cgroups to tell commands by")
	}
	if err := bpfLSMEnabled(); err != nil {
		return nil, err
	}
	dir, hier, ssid, err := guardHierarchy(l)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, err
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("no kernel BTF: %w", err)
	}
	off, err := unixOffsetsOf(spec, ssid)
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	g := &UnixGuard{own: st.Ino}
	pinned := mountBPFFS() == nil
	if pinned {
		g.pinDir = "/sys/fs/bpf/toold-unix-" + hier
		if err := os.MkdirAll(g.pinDir, 0o700); err != nil {
			return nil, err
		}
		if g.lock, err = os.Open(g.pinDir); err != nil {
			return nil, err
		}
		if err := unix.Flock(int(g.lock.Fd()), unix.LOCK_EX); err != nil {
			g.lock.Close()
			return nil, err
		}
		defer unix.Flock(int(g.lock.Fd()), unix.LOCK_UN)
	}
	if err := g.open(off, dir); err != nil {
		// Undo what this toold added; the pins stay when another toold's
		// commands depend on them.
		if g.targets != nil {
			_ = g.targets.Delete(g.own)
		}
		g.closeLocked()
		return nil, err
	}
	how := "released when toold exits (no BPF file system to pin it in: a command that outlives toold's death is not held)"
	if pinned {
		how = "pinned in " + g.pinDir + " while any toold command cgroup remains"
	}
	g.detail = "unix sockets outside the sandbox refused by the kernel whenever they were bound (BPF LSM on unix_stream_connect and unix_may_send; commands told by their " + hier + " cgroup; " + how + ")"
	return g, nil
}

// open loads or re-adopts the map, adds dir, and attaches the program.
func (g *UnixGuard) open(off *unixOffsets, dir string) error {
	mspec := &ebpf.MapSpec{Name: "toold_unix_cg", Type: ebpf.Hash, KeySize: 8, ValueSize: unixTargetPath, MaxEntries: 256}
	var old *ebpf.Map
	if g.pinDir != "" {
		if m, err := ebpf.LoadPinnedMap(filepath.Join(g.pinDir, "targets"), nil); err == nil {
			if m.Type() == mspec.Type && m.KeySize() == mspec.KeySize && m.ValueSize() == mspec.ValueSize {
				g.targets = m
			} else {
				old = m
			}
		}
	}
	if g.targets == nil {
		m, err := ebpf.NewMap(mspec)
		if err != nil {
			return fmt.Errorf("creating the BPF map: %w", err)
		}
		g.targets = m
		if old != nil {
			// Another layout (another version of toold): keep its entries.
			var k uint64
			var v []byte
			it := old.Iterate()
			for it.Next(&k, &v) {
				var val [unixTargetPath]byte
				copy(val[:], v)
				_ = m.Put(k, val)
			}
			_ = old.Unpin()
			old.Close()
		}
		if g.pinDir != "" {
			p := filepath.Join(g.pinDir, "targets")
			_ = os.Remove(p)
			if err := m.Pin(p); err != nil {
				return fmt.Errorf("pinning the BPF map: %w", err)
			}
		}
	}
	g.prune()
	var val [unixTargetPath]byte
	copy(val[:], dir)
	if err := g.targets.Put(g.own, val); err != nil {
		return fmt.Errorf("adding toold's cgroup to the BPF map: %w", err)
	}
	for _, h := range unixHooks {
		ins, err := unixProgram(off, h, g.targets)
		if err != nil {
			return err
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         "toold_" + h.short,
			Type:         ebpf.LSM,
			AttachType:   ebpf.AttachLSMMac,
			AttachTo:     h.name,
			License:      "GPL",
			Instructions: ins,
		})
		if err != nil {
			return fmt.Errorf("loading the BPF LSM program (%s): %w", h.name, err)
		}
		lk, err := link.AttachLSM(link.LSMOptions{Program: prog})
		prog.Close() // the link holds it
		if err != nil {
			return fmt.Errorf("attaching the BPF LSM program (%s): %w", h.name, err)
		}
		g.links = append(g.links, lk)
		if g.pinDir == "" {
			continue
		}
		// The new link is attached before the old one is released: both
		// hold meanwhile.
		p := filepath.Join(g.pinDir, h.short)
		if prev, err := link.LoadPinnedLink(p, nil); err == nil {
			_ = prev.Unpin()
			prev.Close()
		} else {
			_ = os.Remove(p)
		}
		if err := lk.Pin(p); err != nil {
			return fmt.Errorf("pinning the BPF link: %w", err)
		}
	}
	return nil
}

// prune removes the map's entries whose cgroup directory is gone.
func (g *UnixGuard) prune() {
	var k uint64
	var v []byte
	var gone []uint64
	it := g.targets.Iterate()
	for it.Next(&k, &v) {
		path := string(v)
		if i := strings.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil || st.Ino != k {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		_ = g.targets.Delete(k)
	}
}

// Describe says how unix sockets are held, for the network layer.
func (g *UnixGuard) Describe() string { return g.detail }

// Close releases toold's handles. The pinned program stays while a command
// cgroup of any toold remains (a command that outlived its toold); with
// none, it is unpinned and detached. Call it after Limits.Close.
func (g *UnixGuard) Close() error {
	if g == nil {
		return nil
	}
	if g.lock != nil {
		_ = unix.Flock(int(g.lock.Fd()), unix.LOCK_EX)
	}
	g.closeLocked()
	return nil
}

// closeLocked prunes the map and releases toold's handles, and the pins
// when no command cgroup of any toold is left. The caller holds the lock.
func (g *UnixGuard) closeLocked() {
	if g.targets != nil {
		g.prune()
		if g.pinDir != "" && g.targets.Iterate().Next(new(uint64), new([]byte)) {
			g.pinDir = "" // others remain: keep the pins
		}
	}
	g.release()
}

// release closes the handles, and removes the pins when g.pinDir is set.
func (g *UnixGuard) release() {
	for _, l := range g.links {
		if g.pinDir != "" {
			_ = l.Unpin()
		}
		l.Close()
	}
	g.links = nil
	if g.targets != nil {
		if g.pinDir != "" {
			_ = g.targets.Unpin()
		}
		g.targets.Close()
	}
	if g.lock != nil {
		if g.pinDir != "" {
			_ = os.Remove(g.pinDir)
		}
		g.lock.Close()
	}
}

// bpfLSMEnabled says whether the kernel runs the BPF LSM and lets toold
// load a program on its hooks: it checks toold's capabilities, reads the
// active LSMs where securityfs is mounted, then loads a program that
// allows everything (and closes it unattached), before anything is
// created or pinned.
//
// The load needs the kernel's BTF parsed (~11 ms of CPU and the 5 MB
// vmlinux BTF mapped, twice over: the attach target is looked up by name),
// which a kernel that refuses every LSM program would cost each start. A
// refusal is a property of the boot (the active LSMs and the lockdown
// mode are set at boot; lockdown can only be raised), so it is remembered
// for the rest of the boot in unixGuardMemo, and later starts skip the
// probe.
func bpfLSMEnabled() error {
	if err := bpfCapable(); err != nil {
		return err
	}
	if b, err := os.ReadFile("/sys/kernel/security/lsm"); err == nil {
		if !slices.Contains(strings.Split(strings.TrimSpace(string(b)), ","), "bpf") {
			return fmt.Errorf("the kernel does not run the BPF LSM (active: %s; it needs CONFIG_BPF_LSM and \"bpf\" in lsm= at boot)", strings.TrimSpace(string(b)))
		}
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if len(boot) > 0 {
		if b, err := os.ReadFile(unixGuardMemo); err == nil {
			if id, why, ok := strings.Cut(string(b), "\n"); ok && id == strings.TrimSpace(string(boot)) && why != "" {
				return fmt.Errorf("%s (found at an earlier start in this boot, remembered in %s)", why, unixGuardMemo)
			}
		}
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:       ebpf.LSM,
		AttachType: ebpf.AttachLSMMac,
		AttachTo:   unixHooks[1].name,
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if errors.Is(err, unix.EPERM) {
		// cilium/ebpf suggests RLIMIT_MEMLOCK, which Linux 5.11+ does not
		// use: say what the kernel's state is.
		err = fmt.Errorf("the kernel refused to load a BPF LSM program: EPERM%s", lockdownNote())
	} else if err != nil {
		err = fmt.Errorf("the kernel cannot load a BPF LSM program: %w", err)
	}
	if err != nil {
		if len(boot) > 0 {
			rememberRefusal(strings.TrimSpace(string(boot)), err.Error())
		}
		return err
	}
	return prog.Close()
}

// unixGuardMemo remembers, for one boot, that the kernel refused the BPF
// LSM program: the boot id, a newline, the reason. It is in /run (a tmpfs
// emptied at boot), written by root only.
var unixGuardMemo = "/run/toold/unix-guard-refused"

// rememberRefusal writes unixGuardMemo (best effort: a toold that cannot
// write it probes again at its next start).
func rememberRefusal(boot, why string) {
	if err := os.MkdirAll(filepath.Dir(unixGuardMemo), 0o755); err != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d", unixGuardMemo, os.Getpid())
	if err := os.WriteFile(tmp, []byte(boot+"\n"+why), 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, unixGuardMemo); err != nil {
		os.Remove(tmp)
	}
}

// bpfCapable says whether toold's effective capabilities let it load and
// attach an LSM program (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN), before any
// BTF is read.
func bpfCapable() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading toold's capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var missing []string
	for _, c := range []struct {
		n    uint
		name string
	}{{unix.CAP_BPF, "CAP_BPF"}, {unix.CAP_PERFMON, "CAP_PERFMON"}, {unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}} {
		if !has(c.n) {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("toold lacks %s to load a BPF LSM program", strings.Join(missing, ", "))
	}
	return nil
}

// lockdownNote names the kernel's lockdown mode when one is set.
func lockdownNote() string {
	b, err := os.ReadFile("/sys/kernel/security/lockdown")
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i || s[i+1:j] == "none" {
		return ""
	}
	return " (kernel lockdown: " + s[i+1:j] + ")"
}

// mountBPFFS makes sure a BPF file system is mounted at /sys/fs/bpf.
func mountBPFFS() error {
	var fs unix.Statfs_t
	if err := unix.Statfs("/sys/fs/bpf", &fs); err != nil {
		return err
	}
	if fs.Type == bpfFSMagic {
		return nil
	}
	return unix.Mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")
}

// guardHierarchy returns the cgroup directory the program tells toold's
// commands by, the hierarchy's name, and for cgroup v1 its controller's
// subsystem name ("" for v2).
func guardHierarchy(l *Limits) (dir, hier, ctrl string, err error) {
	d := l.dirs[0]
	if l.v2 {
		return d, "v2", "", nil
	}
	for _, c := range []string{"pids", "memory"} {
		if exists(filepath.Join(d, c+".max")) || exists(filepath.Join(d, c+".limit_in_bytes")) {
			return d, "v1-" + c, c, nil
		}
	}
	return "", "", "", fmt.Errorf("cannot tell the cgroup v1 controller of %s", d)
}

// unixOffsets are the byte offsets, in the running kernel, of the members
// the program reads.
type unixOffsets struct {
	socketSk    int16 // struct socket: sk
	sockNet     int16 // struct sock: __sk_common.skc_net.net
	taskNsproxy int16 // struct task_struct: nsproxy
	nsproxyNet  int16 // struct nsproxy: net_ns
	taskCgroups int16 // struct task_struct: cgroups
	cssetDfl    int16 // struct css_set: dfl_cgrp
	cssetSubsys int16 // struct css_set: subsys[ssid] (v1), or -1
	cssCgroup   int16 // struct cgroup_subsys_state: cgroup
	cgroupPar   int16 // struct cgroup: self.parent
	cgroupKn    int16 // struct cgroup: kn
	knID        int16 // struct kernfs_node: id
}

// unixOffsetsOf reads the offsets from the kernel's BTF; ctrl is the v1
// controller whose hierarchy the program walks ("" for v2).
func unixOffsetsOf(spec *btf.Spec, ctrl string) (*unixOffsets, error) {
	o := &unixOffsets{cssetSubsys: -1}
	for _, m := range []struct {
		dst        *int16
		typ, field string
	}{
		{&o.socketSk, "socket", "sk"},
		{&o.sockNet, "sock", "__sk_common.skc_net.net"},
		{&o.taskNsproxy, "task_struct", "nsproxy"},
		{&o.nsproxyNet, "nsproxy", "net_ns"},
		{&o.taskCgroups, "task_struct", "cgroups"},
		{&o.cssetDfl, "css_set", "dfl_cgrp"},
		{&o.cssCgroup, "cgroup_subsys_state", "cgroup"},
		{&o.cgroupPar, "cgroup", "self.parent"},
		{&o.cgroupKn, "cgroup", "kn"},
		{&o.knID, "kernfs_node", "id"},
	} {
		off, err := memberOffset(spec, m.typ, m.field)
		if err != nil {
			return nil, err
		}
		*m.dst = off
	}
	if ctrl != "" {
		var e *btf.Enum
		if err := spec.TypeByName("cgroup_subsys_id", &e); err != nil {
			return nil, fmt.Errorf("enum cgroup_subsys_id: %w", err)
		}
		id := -1
		for _, v := range e.Values {
			if v.Name == ctrl+"_cgrp_id" {
				id = int(v.Value)
			}
		}
		if id < 0 {
			return nil, fmt.Errorf("the kernel has no %s controller", ctrl)
		}
		base, err := memberOffset(spec, "css_set", "subsys")
		if err != nil {
			return nil, err
		}
		o.cssetSubsys = base + int16(8*id)
	}
	return o, nil
}

// memberOffset returns the byte offset of the member at path (dotted, into
// nested and anonymous structures and unions) in struct typ.
func memberOffset(spec *btf.Spec, typ, path string) (int16, error) {
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return 0, fmt.Errorf("struct %s: %w", typ, err)
	}
	var t btf.Type = s
	total := uint32(0)
	for _, name := range strings.Split(path, ".") {
		off, mt, ok := findMember(t, name)
		if !ok {
			return 0, fmt.Errorf("struct %s has no member %s", typ, path)
		}
		total += off
		t = btf.UnderlyingType(mt)
	}
	if total > 1<<15-1 {
		return 0, fmt.Errorf("struct %s: %s is too far in", typ, path)
	}
	return int16(total), nil
}

// findMember finds the member name of a struct or union, looking into
// anonymous members; off is in bytes.
func findMember(t btf.Type, name string) (off uint32, typ btf.Type, ok bool) {
	var members []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		members = c.Members
	case *btf.Union:
		members = c.Members
	default:
		return 0, nil, false
	}
	for _, m := range members {
		if m.Name == name {
			return m.Offset.Bytes(), m.Type, true
		}
		if m.Name == "" {
			if o, mt, ok := findMember(m.Type, name); ok {
				return m.Offset.Bytes() + o, mt, true
			}
		}
	}
	return 0, nil, false
}

// unixHook is one LSM hook the program is attached to.
type unixHook struct {
	name, short string
	nargs       int  // the hook's arguments; its previous verdict follows
	socket      bool // the arguments are struct socket (else struct sock)
}

var unixHooks = []unixHook{
	{name: "unix_stream_connect", short: "connect", nargs: 3},
	{name: "unix_may_send", short: "send", nargs: 2, socket: true},
}

// unixProgram returns the program for hook h. In C it would read:
//
//	if (prev_verdict) return -EPERM;
//	return unix_decision(sock->sk, other->sk) == DENY ? -EPERM : 0;
func unixProgram(o *unixOffsets, h unixHook, targets *ebpf.Map) (asm.Instructions, error) {
	const deny, allow = "deny", "allow"
	in := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		// An earlier program's refusal stands.
		ld(asm.R0, asm.R6, int16(8*h.nargs)),
		asm.JNE.Imm32(asm.R0, 0, deny),
		ld(asm.R2, asm.R6, 0),
		ld(asm.R3, asm.R6, 8),
	}
	if h.socket {
		in = append(in, ld(asm.R2, asm.R2, o.socketSk), ld(asm.R3, asm.R3, o.socketSk))
	}
	decide, err := unixDecision(o, targets, deny, allow)
	if err != nil {
		return nil, err
	}
	in = append(in, decide...)
	return append(in,
		asm.Mov.Imm(asm.R0, -int32(syscall.EPERM)).WithSymbol(deny),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(allow),
		asm.Return(),
	), nil
}

// ld loads the pointer (or 64-bit value) at src+off into dst.
func ld(dst, src asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(dst, src, off, asm.DWord)
}

// unixDecision returns the program's decision on a connection or datagram
// from the socket in R2 to the socket in R3 (both struct sock): it jumps
// to deny or allow. It uses R0 to R7 and the stack's last 8 bytes, and
// keeps R8 and R9. In C it would read:
//
//	net = sock_net(sk), peer = sock_net(other);
//	if (net == peer && current->nsproxy->net_ns == peer) goto allow;
//	for (cg = task_cgroup(current, hierarchy), i = 0; cg && i < depth; i++) {
//		if (bpf_map_lookup_elem(&targets, &cg->kn->id)) goto deny;
//		cg = cg->self.parent ? cg->self.parent->cgroup : NULL;
//	}
//	goto allow;
func unixDecision(o *unixOffsets, targets *ebpf.Map, deny, allow string) (asm.Instructions, error) {
	const walk = "walk"
	in := asm.Instructions{
		ld(asm.R2, asm.R2, o.sockNet),
		ld(asm.R7, asm.R3, o.sockNet),
		asm.JNE.Reg(asm.R2, asm.R7, walk),
		asm.FnGetCurrentTaskBtf.Call(),
		ld(asm.R0, asm.R0, o.taskNsproxy),
		ld(asm.R0, asm.R0, o.nsproxyNet),
		asm.JEq.Reg(asm.R0, asm.R7, allow),
		asm.FnGetCurrentTaskBtf.Call().WithSymbol(walk),
		ld(asm.R1, asm.R0, o.taskCgroups),
	}
	if o.cssetSubsys >= 0 {
		in = append(in, ld(asm.R1, asm.R1, o.cssetSubsys), ld(asm.R6, asm.R1, o.cssCgroup))
	} else {
		in = append(in, ld(asm.R6, asm.R1, o.cssetDfl))
	}
	mapPtr := asm.LoadMapPtr(asm.R1, 0)
	if err := mapPtr.AssociateMap(targets); err != nil {
		return nil, err
	}
	for range unixGuardDepth {
		in = append(in,
			asm.JEq.Imm(asm.R6, 0, allow),
			ld(asm.R1, asm.R6, o.cgroupKn),
			ld(asm.R1, asm.R1, o.knID),
			asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
			mapPtr,
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.FnMapLookupElem.Call(),
			asm.JNE.Imm(asm.R0, 0, deny),
			ld(asm.R1, asm.R6, o.cgroupPar),
			asm.JEq.Imm(asm.R1, 0, allow),
			ld(asm.R6, asm.R1, o.cssCgroup),
		)
	}
	return append(in, asm.Ja.Label(allow)), nil
}
