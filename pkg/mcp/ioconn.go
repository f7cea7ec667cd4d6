package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	json "github.com/segmentio/encoding/json"
)

// IOTransport is the [sdk.Transport] of a server's end of a stdio session
// (`toold mcp`): newline-delimited JSON-RPC read from Reader and written
// to Writer, as the SDK's [sdk.IOTransport] does, over the connection
// toold's stdio client uses (stdioTransport): each message is read into
// one reused buffer and decoded once, where the SDK's connection decodes
// it twice more with a fresh 32 KB decoder buffer each time (issue 27,
// bench/profiles-2026-11-28-alloc.md).
//
// Kept from the SDK's connection: messages up to MaxLineLength bytes; the
// same fields and nesting limit (decodeMessage); a JSON-RPC batch is read
// one message at a time, and the responses to its requests are written
// together as one batch, in the batch's order, once the last is ready; a
// batch that repeats a request id, or holds the id of a request of a
// batch not yet answered, ends the connection with an error, as does any
// batch once the session negotiated protocol 2025-06-18 or later, which
// has no batches. Close closes Reader, then Writer; a Read blocked in
// Reader ends with it (where Reader's Close unblocks it, as for a pipe).
//
// One difference: a message is one line, as the spec says ("messages are
// delimited by newlines, and MUST NOT contain embedded newlines"); the
// SDK's stream decoder also took a message pretty-printed over several
// lines, which ends this connection with a decoding error.
type IOTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxLineLength bounds one inbound message; 0 means
	// sdk.DefaultMaxLineLength, a negative value no bound.
	MaxLineLength int
}

var (
	_ sdk.Transport  = (*IOTransport)(nil)
	_ sdk.Connection = (*ioConn)(nil)
)

// Connect implements [sdk.Transport]; it starts reading Reader.
func (t *IOTransport) Connect(context.Context) (sdk.Connection, error) {
	max := t.MaxLineLength
	switch {
	case max == 0:
		max = sdk.DefaultMaxLineLength
	case max < 0:
		max = math.MaxInt
	}
	c := &ioConn{
		stdioConn: stdioConn{
			stdin:    t.Writer,
			incoming: make(chan stdioRead),
			closed:   make(chan struct{}),
		},
		in: t.Reader,
	}
	go c.readLoop(bufio.NewReaderSize(t.Reader, 16<<10), max)
	return c, nil
}

// ioConn is a server's stdio connection: the client's stdioConn (reads,
// writes of one message) with the SDK's batch rules.
type ioConn struct {
	stdioConn
	in io.Closer

	// mu guards what follows: Write runs concurrently with Read.
	mu sync.Mutex
	// initID is the id of the initialize request while it is unanswered
	// (initPending); version is the protocol version its answer
	// negotiated.
	initID      jsonrpc.ID
	initPending bool
	version     string
	// batches maps the id of each request of a batch not yet answered to
	// its batch.
	batches map[jsonrpc.ID]*msgBatch
}

// msgBatch is a batch whose requests are not all answered yet: the index
// of each unanswered request's response in responses.
type msgBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// errInvalidRequest is the SDK's jsonrpc2.ErrInvalidRequest (internal).
var errInvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// protocolNoBatches is the first protocol revision without JSON-RPC
// batches.
const protocolNoBatches = "2025-06-18"

// Read implements [sdk.Connection]: stdioConn's, with each line read
// tracked (track).
func (c *ioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	return c.read(ctx, c.track)
}

// track notes the initialize request among what r read, and records a
// batch's requests so that their responses are written as one batch.
func (c *ioConn) track(r stdioRead) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range r.msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" && req.ID.IsValid() && c.version == "" && !c.initPending {
			c.initID, c.initPending = req.ID, true
		}
	}
	if !r.batch {
		return nil
	}
	if c.version >= protocolNoBatches {
		return fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", protocolNoBatches, c.version)
	}
	var b *msgBatch
	for _, m := range r.msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			continue // a response, or a notification: nothing to answer
		}
		if b == nil {
			b = &msgBatch{unresolved: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.unresolved[req.ID]; dup {
			return fmt.Errorf("duplicate message ID %q", req.ID)
		}
		b.unresolved[req.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	if b == nil {
		return nil
	}
	for id := range b.unresolved {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("%w: batch contains previously seen request %v", errInvalidRequest, id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*msgBatch{}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// answered notes resp: the protocol version an answer to initialize
// negotiated, and a response to a request of a batch. inBatch reports the
// latter; batch is then the whole batch's responses when resp was its
// last, nil until then.
func (c *ioConn) answered(resp *jsonrpc.Response) (batch []*jsonrpc.Response, inBatch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initPending && resp.ID == c.initID {
		c.initPending = false
		if resp.Error == nil {
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(resp.Result, &res) == nil {
				c.version = res.ProtocolVersion
			}
		}
	}
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) > 0 {
		return nil, true
	}
	return b.responses, true
}

// Write implements [sdk.Connection]: one message, one line, one write; the
// responses to a batch's requests wait for its last and go as one line.
func (c *ioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.stdioConn.Write(ctx, msg)
	}
	batch, inBatch := c.answered(resp)
	if !inBatch {
		return c.stdioConn.Write(ctx, msg)
	}
	if batch == nil {
		return nil
	}
	data := []byte{'['}
	for i, r := range batch {
		enc, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return fmt.Errorf("encoding batch message: %w", err)
		}
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, enc...)
	}
	return c.writeLine(append(data, ']', '\n'))
}

// Close implements [sdk.Connection]: it closes Reader, then Writer. Later
// calls return the first one's result.
func (c *ioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		rerr := c.in.Close()
		// Not under writeMu, as stdioConn.Close: a Write blocked on a
		// client that does not read toold's stdout holds it, and closing
		// Writer is what ends that Write.
		werr := c.stdin.Close()
		c.closeErr = errors.Join(rerr, werr)
	})
	return c.closeErr
}
