package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	json "github.com/segmentio/encoding/json"
)

// stdioTransport is the [sdk.Transport] of a stdio MCP server: it starts the
// command and speaks newline-delimited JSON-RPC over its stdin and stdout,
// as the SDK's CommandTransport does, with one difference in cost: each
// message is read into one reused buffer and decoded once, where the SDK's
// connection decodes every message twice more (a try as a batch, then as a
// message) with a fresh 32 KB decoder buffer each time — ~64 KB of garbage
// per tools/call answer, bench row 8's largest allocation (issue 27,
// bench/profiles-2026-11-28-alloc.md). Written here because the SDK offers
// no option to reuse them; it is the SDK's documented Transport and
// Connection interfaces, and the SDK still does the protocol.
//
// Behaviour kept from the SDK's stdio connection: messages (and JSON-RPC
// batches, which are queued and read one by one) up to
// [sdk.DefaultMaxLineLength] bytes, fields matched case-sensitively, the
// same nesting limit; a message that does not decode ends the connection
// with the error. Close closes the server's stdin, waits terminate for it to
// exit, then sends SIGTERM and, as long again later, SIGKILL (the spec's
// stdio shutdown). Replies to a batch of server-to-client requests are
// written one by one, not as a batch (JSON-RPC allows either; batches are
// gone from the protocol since 2025-06-18). The spec forbids newlines inside
// a message, so a line is a message: a pretty-printed message spanning lines
// is an error, as the spec says it is.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	maxLine   int // 0 means sdk.DefaultMaxLineLength
}

var (
	_ sdk.Transport  = (*stdioTransport)(nil)
	_ sdk.Connection = (*stdioConn)(nil)
)

// Connect starts the command and returns the connection to it.
func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	max := t.maxLine
	if max <= 0 {
		max = sdk.DefaultMaxLineLength
	}
	c := &stdioConn{
		cmd:       t.cmd,
		stdin:     stdin,
		terminate: t.terminate,
		incoming:  make(chan stdioRead),
		closed:    make(chan struct{}),
	}
	go c.readLoop(bufio.NewReaderSize(stdout, 16<<10), max)
	return c, nil
}

// stdioConn is one connection to a started stdio server.
type stdioConn struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration

	// incoming carries what readLoop decoded to Read; closed ends both.
	incoming chan stdioRead
	closed   chan struct{}
	// queue holds the rest of a batch; Read is not called concurrently.
	queue []jsonrpc.Message

	writeMu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

type stdioRead struct {
	msgs  []jsonrpc.Message
	batch bool // msgs came as a JSON-RPC batch (an array)
	err   error
}

// errLineTooLong is the SDK's limit on one inbound message.
var errLineTooLong = errors.New("inbound JSON-RPC message exceeded the maximum line length")

// readLoop reads and decodes the server's stdout line by line until it ends,
// a line fails to decode, or the connection closes. It runs on its own
// goroutine so that Close unblocks Read (the pipe's read ends when the
// process exits and Wait closes it).
func (c *stdioConn) readLoop(br *bufio.Reader, max int) {
	var long []byte // a line longer than br's buffer, reused
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= max {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > max {
			err = errLineTooLong
		}
		var r stdioRead
		if err != nil && (!errors.Is(err, io.EOF) || len(bytes.TrimSpace(line)) == 0) {
			r.err = err
		} else if line = bytes.TrimSpace(line); len(line) == 0 {
			continue // blank lines between messages, as a JSON decoder skips them
		} else {
			r.msgs, r.err = decodeMessages(line)
			r.batch = line[0] == '['
		}
		select {
		case c.incoming <- r:
		case <-c.closed:
			return
		}
		if r.err != nil {
			return
		}
		if err != nil { // the last line had no newline; the next read is EOF
			select {
			case c.incoming <- stdioRead{err: io.EOF}:
			case <-c.closed:
			}
			return
		}
	}
}

// Read implements [sdk.Connection].
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	return c.read(ctx, nil)
}

// read returns the next message: one left of a batch already read, or the
// first of the next line read, which note, when set, sees first (and may
// refuse with an error).
func (c *stdioConn) read(ctx context.Context, note func(stdioRead) error) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	var r stdioRead
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r = <-c.incoming:
		if r.err != nil {
			return nil, r.err
		}
	case <-c.closed:
		return nil, io.EOF
	}
	if note != nil {
		if err := note(r); err != nil {
			return nil, err
		}
	}
	c.queue = r.msgs[1:]
	return r.msgs[0], nil
}

// Write implements [sdk.Connection]: one message, one line, one write.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(append(data, '\n'))
}

// writeLine writes data, one or more whole lines, in one write, unless the
// connection is closed.
func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return sdk.ErrConnectionClosed
	default:
	}
	_, err := c.stdin.Write(data)
	return err
}

// Close implements [sdk.Connection]: it closes the server's stdin and waits
// for the process, signalling it if it does not exit (see stdioTransport).
// Later calls return the first one's result.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		// Not under writeMu: a Write blocked on a server that does not
		// read its stdin holds it until the pipe drains, which would be
		// never; closing the pipe is what ends that Write (os.ErrClosed).
		// A Write that checked closed just before writes to a closed
		// file and fails the same way.
		err := c.stdin.Close()
		if err != nil {
			c.closeErr = fmt.Errorf("closing stdin: %w", err)
			return
		}
		c.closeErr = c.wait()
	})
	return c.closeErr
}

func (c *stdioConn) wait() error {
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(c.terminate)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}

// SessionID implements [sdk.Connection]; stdio has no session id.
func (c *stdioConn) SessionID() string { return "" }

// maxDepth is the SDK's nesting limit for a decoded message.
const maxDepth = 1000

// wireMessage is a JSON-RPC message as it is on the wire, the fields the
// SDK's decoder reads. Method is raw so that a present but empty "method"
// still makes a request.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

const parseFlags = json.DontMatchCaseInsensitiveStructFields

// decodeMessages decodes one line: a JSON-RPC message, or a batch of them
// (a non-empty array). It decodes as jsonrpc.DecodeMessage does, straight
// from the line (segmentio's Parse: no decoder buffer).
func decodeMessages(line []byte) ([]jsonrpc.Message, error) {
	if err := checkDepth(line); err != nil {
		return nil, err
	}
	if line[0] != '[' {
		m, err := decodeMessage(line)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := parseAll(line, &raws, json.DontCopyRawMessage); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, len(raws))
	for i, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := parseAll(data, &w, 0); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.Version, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if err := parseAll(w.Method, &method, 0); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request")
	}
	r := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		r.Error = w.Error
	}
	return r, nil
}

// parseAll decodes data, which must hold exactly one JSON value, into v.
func parseAll(data []byte, v any, flags json.ParseFlags) error {
	rest, err := json.Parse(data, v, parseFlags|flags)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("invalid trailing data after a JSON-RPC message")
	}
	return nil
}

// checkDepth refuses JSON nested deeper than maxDepth, as the SDK's decoder
// does, before a recursive decoder sees it.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
