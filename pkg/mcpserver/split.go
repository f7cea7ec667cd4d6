package mcpserver

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"time"
)

// http2Preface opens every HTTP/2 connection with prior knowledge, which is
// how gRPC clients speak over plaintext TCP.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// sniffTimeout bounds how long a new connection may take to send the bytes
// that tell gRPC from HTTP/1.
const sniffTimeout = 10 * time.Second

// Split shares one TCP listener between gRPC and HTTP/1.1: a connection
// that opens with the HTTP/2 client preface goes to the first returned
// listener (give it to grpc.Server.Serve), any other to the second (give it
// to http.Server.Serve). A connection is classified by its first bytes, read
// with a 10 s limit in its own goroutine, so a silent client holds up no one;
// gRPC connections then run unchanged on the raw connection (the sniffed
// bytes are replayed first), so gRPC performance is that of the plain
// listener. HTTP/2 with prior knowledge (h2c) is taken as gRPC.
//
// Closing the gRPC listener closes l, as grpc.Server's Stop closes its
// listeners, which ends both; closing the HTTP listener stops only its
// Accept.
func Split(l net.Listener) (grpcL, httpL net.Listener) {
	s := &splitter{l: l, h2: newChanListener(l.Addr()), h1: newChanListener(l.Addr()), sniffing: map[net.Conn]bool{}}
	s.h2.onClose = func() { _ = l.Close() }
	go s.accept()
	return s.h2, s.h1
}

type splitter struct {
	l      net.Listener
	h2, h1 *chanListener

	wg       sync.WaitGroup // sniff goroutines
	mu       sync.Mutex
	sniffing map[net.Conn]bool
}

// accept runs until l is closed; each connection is sniffed in its own
// goroutine, which ends once the connection is handed over or closed. When
// l closes, connections still being sniffed are closed and their
// goroutines awaited.
func (s *splitter) accept() {
	defer func() {
		s.mu.Lock()
		for c := range s.sniffing {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	}()
	for {
		c, err := s.l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			s.h2.fail(err)
			s.h1.fail(err)
			return
		}
		s.mu.Lock()
		s.sniffing[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.sniff(c)
		}()
	}
}

func (s *splitter) sniff(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.sniffing, c)
		s.mu.Unlock()
	}()
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	buf := make([]byte, 0, len(http2Preface))
	one := make([]byte, len(http2Preface))
	isH2 := true
	for len(buf) < len(http2Preface) {
		n, err := c.Read(one[:len(http2Preface)-len(buf)])
		buf = append(buf, one[:n]...)
		if !bytes.HasPrefix([]byte(http2Preface), buf) {
			isH2 = false
			break
		}
		if err != nil {
			c.Close()
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	pc := &prefixConn{Conn: c, prefix: buf}
	if isH2 {
		s.h2.deliver(pc)
	} else {
		s.h1.deliver(pc)
	}
}

// prefixConn replays the sniffed bytes before reading on.
type prefixConn struct {
	net.Conn
	prefix []byte
}

// Read implements net.Conn.
func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// chanListener is a net.Listener fed by the splitter.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	err    error
	// onClose, when set, runs once when the listener closes.
	onClose func()
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// deliver hands c to Accept, or closes it when the listener is closed.
func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}

// fail makes Accept return err (the real listener's) from now on.
func (l *chanListener) fail(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
	l.Close()
}

// Accept implements net.Listener.
func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil && !errors.Is(l.err, net.ErrClosed) {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *chanListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		if l.onClose != nil {
			l.onClose()
		}
	})
	return nil
}

// Addr implements net.Listener.
func (l *chanListener) Addr() net.Addr { return l.addr }

var _ net.Conn = (*prefixConn)(nil)
