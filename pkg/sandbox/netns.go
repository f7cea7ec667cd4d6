package sandbox

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace made once and shared by the isolated
// commands of a toold (Stdio.Netns): creating and tearing down one per
// command costs tens of milliseconds (RCU grace periods), joining one costs
// microseconds. It has only the loopback interface up and, with a proxy,
// a listener on 127.0.0.1 at the proxy's port, whose connections the daemon
// forwards to the proxy from its own namespace. The commands of one toold
// therefore share their loopback (a server one starts on 127.0.0.1 is
// reachable from another's), never the host's.
type Netns struct {
	file *os.File
	ln   net.Listener
	wg   sync.WaitGroup
}

// OpenNetns creates the namespace; proxy is toold's egress proxy
// ("127.0.0.1:PORT", or "" for no network at all). Close releases it.
func OpenNetns(proxy string) (*Netns, error) {
	type made struct {
		n   *Netns
		err error
	}
	ch := make(chan made, 1)
	go func() {
		// This thread enters the namespace and never leaves: the goroutine
		// ends locked, so the runtime ends the thread.
		runtime.LockOSThread()
		ln, err := enterNetns(proxy)
		if err != nil {
			ch <- made{err: err}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			if ln != nil {
				ln.Close()
			}
			ch <- made{err: fmt.Errorf("opening the sandbox's network namespace: %w", err)}
			return
		}
		ch <- made{n: &Netns{file: f, ln: ln}}
	}()
	m := <-ch
	if m.err != nil {
		return nil, m.err
	}
	if m.n.ln != nil {
		m.n.wg.Add(1)
		go func() { defer m.n.wg.Done(); forward(m.n.ln, proxy) }()
	}
	return m.n, nil
}

// File returns the namespace's file, for Stdio.Netns.
func (n *Netns) File() *os.File {
	if n == nil {
		return nil
	}
	return n.file
}

// Close stops forwarding (open connections end) and releases the
// namespace; commands in it keep it alive until they end.
func (n *Netns) Close() error {
	if n == nil {
		return nil
	}
	if n.ln != nil {
		n.ln.Close()
	}
	n.wg.Wait()
	return n.file.Close()
}

// joinNetns moves the calling thread (locked, never to be unlocked) into
// the network namespace open as fd.
func joinNetns(fd int) error {
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("joining the sandbox's network namespace: %w", err)
	}
	return nil
}
