package peercred

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// TCPPeers returns the processes holding the other end of the TCP
// connection from remote to local (as toold sees it: local is toold's
// address, remote the client's), when the client is in toold's network
// namespace: the socket with local address remote and remote address local
// in /proc/net/tcp (or tcp6), then every process with that socket among its
// open files (/proc/PID/fd). Processes toold may not inspect (another
// user's) are not found. An empty result with a nil error means no visible
// process holds it (a client on another host, in another pid namespace, or
// an end passed away in flight).
func (c *Checker) TCPPeers(local, remote net.Addr) ([]int, error) {
	l, err1 := netip.ParseAddrPort(local.String())
	r, err2 := netip.ParseAddrPort(remote.String())
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%w: not TCP addresses: %s, %s", ErrUnidentified, local, remote)
	}
	// /proc/net/tcp is generated as it is read: a socket that moves in the
	// kernel's tables while they are being read (other connections come
	// and go) can be skipped, and so can an fd in /proc/PID/fd. An end
	// that is not found is looked for again a few times before the answer
	// is "nobody visible holds it".
	for attempt := 0; ; attempt++ {
		inode, err := c.socketInode(r, l)
		if err != nil {
			return nil, err
		}
		if inode != 0 {
			if pids := c.holders(inode); len(pids) > 0 || attempt >= tcpLookups-1 {
				return pids, nil
			}
		} else if attempt >= tcpLookups-1 {
			return nil, nil
		}
	}
}

// tcpLookups is how many times TCPPeers reads the kernel's tables.
const tcpLookups = 5

// Loopback reports whether a connection's client address is on this host's
// loopback (127/8, ::1, or an IPv4-mapped loopback).
func Loopback(remote net.Addr) bool {
	ap, err := netip.ParseAddrPort(remote.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// socketInode finds the inode of the socket whose local address is from and
// remote address is to; 0 when there is none.
func (c *Checker) socketInode(from, to netip.AddrPort) (uint64, error) {
	want := map[string]bool{}
	for _, file := range []string{"tcp", "tcp6"} {
		f, ok1 := procAddr(from, file == "tcp6")
		t, ok2 := procAddr(to, file == "tcp6")
		if !ok1 || !ok2 {
			continue
		}
		want[file+" "+f+" "+t] = true
	}
	// The calling thread's network namespace, not the process's:
	// /proc/self/net is the main thread's, which may have been moved into
	// another namespace (a goroutine that locked it, joined a sandbox's
	// namespace and ended leaves it there). Other goroutines never run on
	// such a thread, so this one is in toold's own namespace.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := c.proc() + "/thread-self/net/"
	if _, err := os.Stat(dir); err != nil {
		dir = c.proc() + "/net/" // Linux < 3.17
	}
	for _, file := range []string{"tcp", "tcp6"} {
		fh, err := os.Open(dir + file)
		if err != nil {
			continue
		}
		// A large buffer reads the table in few read(2) calls: fewer
		// chances for it to change between them.
		sc := bufio.NewScanner(bufio.NewReaderSize(fh, 1<<20))
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		sc.Scan() // the header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			if want[file+" "+fs[1]+" "+fs[2]] {
				fh.Close()
				return strconv.ParseUint(fs[9], 10, 64)
			}
		}
		fh.Close()
	}
	return 0, nil
}

// procAddr formats an address as /proc/net/tcp{,6} shows it: the address's
// 32-bit words in the kernel's (little-endian, on the machines toold runs
// on) order, in upper-case hex, a colon, and the port in hex.
func procAddr(ap netip.AddrPort, six bool) (string, bool) {
	a := ap.Addr()
	var b []byte
	switch {
	case six:
		a16 := a.As16() // an IPv4 address becomes ::ffff:a.b.c.d
		b = a16[:]
	case a.Unmap().Is4():
		a4 := a.Unmap().As4()
		b = a4[:]
	default:
		return "", false
	}
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.LittleEndian.Uint32(b[i:i+4]))
	}
	fmt.Fprintf(&sb, ":%04X", ap.Port())
	return sb.String(), true
}

// holders returns the processes that have socket inode open.
func (c *Checker) holders(inode uint64) []int {
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	d, err := os.Open(c.proc())
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		dir := c.proc() + "/" + n + "/fd"
		fd, err := os.Open(dir)
		if err != nil {
			continue
		}
		fds, _ := fd.Readdirnames(-1)
		fd.Close()
		for _, f := range fds {
			if l, err := os.Readlink(dir + "/" + f); err == nil && l == want {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
