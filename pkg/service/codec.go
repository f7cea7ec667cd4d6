package service

import (
	"io"
	"math/bits"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// Message limits of ExecuteTool.
//
// What grpc-go does with a message it cannot take (v1.85, read in
// rpc_util.go and stream.go): a message longer than the server's
// MaxRecvMsgSize is refused from its 5-byte header, before its body is
// read, so the stream's framing is lost; and any error of RecvMsg (that
// one, or a codec that fails to unmarshal, as proto does on invalid UTF-8
// in a string field) makes grpc-go write the error status to the client at
// once: the stream and every call on it end. Neither can be turned into a
// per-message refusal from the handler.
//
// So the limits are split. The transport limit (grpc.MaxRecvMsgSize) is
// raised to TransportMessageBytes, which only bounds the memory one message
// may take while it is read; the message limit (Config.MaxMessageBytes,
// default 4 MiB, gRPC's own default) is enforced by toold's codec, which
// never fails on a ClientMessage: a message over the limit, or one that
// does not decode, is handed to the stream as a refusal of that message
// alone. Only a message over the transport limit still ends the stream
// (RESOURCE_EXHAUSTED), because gRPC cannot skip it.
const (
	// DefaultMaxMessageBytes is the default message limit.
	DefaultMaxMessageBytes = 4 << 20
	// minTransportMessageBytes is the least transport limit.
	minTransportMessageBytes = 64 << 20
)

// TransportMessageBytes is the transport limit for a message limit of
// maxMessage bytes: the larger of 64 MiB and maxMessage.
func TransportMessageBytes(maxMessage int) int {
	if maxMessage <= 0 {
		maxMessage = DefaultMaxMessageBytes
	}
	return max(minTransportMessageBytes, maxMessage)
}

// GRPCServerOptions returns the options a grpc.Server serving s needs: the
// codec that turns a bad ClientMessage into a refusal of that message, and
// the transport limit. Every server that registers s must use them.
func (s *Server) GRPCServerOptions() []grpc.ServerOption {
	return CodecServerOptions(s.opts.MaxMessageBytes)
}

// CodecServerOptions returns the options GRPCServerOptions returns for a
// message limit of maxMessageBytes (0: DefaultMaxMessageBytes): toold's
// codec and the transport limit. toolbench's ladder builds servers with
// them to measure what they cost without the rest of toold.
func CodecServerOptions(maxMessageBytes int) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(clientCodec{base: encoding.GetCodecV2("proto"), limit: maxMessageBytes}),
		grpc.MaxRecvMsgSize(TransportMessageBytes(maxMessageBytes)),
	}
}

// inbound is what ExecuteTool receives for each client message: the
// message, or why it cannot be used (then msg is nil and the bad fields
// tell what could be read of it).
type inbound struct {
	msg *pb.ClientMessage
	bad *badMessage
}

// badMessage is a client message refused on its own.
type badMessage struct {
	err error
	// kind is the oneof field number of the message (2 for a ToolCall),
	// zero when it could not be read.
	kind protowire.Number
	// callID is the ToolCall's call_id when it could be read and is valid
	// UTF-8; name its tool name, likewise.
	callID, name string
}

// clientCodec is the server's codec: proto (base), except that
// unmarshaling into an *inbound never fails, other messages keep the
// message limit, and marshaling repairs invalid UTF-8 instead of failing.
type clientCodec struct {
	base  encoding.CodecV2
	limit int
}

func (c clientCodec) Name() string { return c.base.Name() }

// Marshal is base's, with one difference: a message that fails because a
// string holds invalid UTF-8 (a file name, a command's output that a tool
// passed on unchecked) is sent with those bytes replaced by U+FFFD, not
// refused: grpc-go ends the stream on any send error, and one odd byte
// must not end every call of the stream.
func (c clientCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := c.marshal(v)
	if err == nil || !strings.Contains(err.Error(), "UTF-8") {
		return b, err
	}
	m, ok := v.(proto.Message)
	if !ok {
		return b, err
	}
	fixUTF8(m.ProtoReflect())
	return c.marshal(v)
}

// marshal is base's Marshal with one difference: a message large enough to
// be pooled is marshaled into a buffer of sendPool, which does not clear
// the buffers it hands out. grpc-go's default pool clears the whole
// capacity of each one (v1.85, internal/mem's sizedBufferPool.Get), and a
// 256 KiB output chunk takes a buffer of its 1 MiB tier: streaming a
// command's output cleared 4 bytes for every byte sent, 13% of toold's
// CPU in row 7 of toolbench (bench/profiles-2026-11-27-stream.md). The
// marshaled message overwrites every byte it uses; the rest of the buffer
// is never read.
func (c clientCodec) marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return c.base.Marshal(v)
	}
	// UseCachedSize below relies on this Size, as in grpc-go's codec.
	size := proto.Size(m)
	// A small message (every event of a think) goes into a pooled buffer
	// of smallPooled bytes too: gRPC frees it once written and it is
	// used again. Marshaled into a fresh slice it was three allocations
	// (the bytes, the slice boxed as a Buffer, the BufferSlice); pooled it
	// is one (the BufferSlice).
	buf := sendPool.Get(max(size, smallPooled))
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		sendPool.Put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, sendPool)}, nil
}

// sendPool holds the buffers of the large messages toold sends; gRPC
// returns each one once it has written it.
var sendPool = &dirtyPool{}

// smallPooled is the least buffer a message is marshaled into: the first
// tier above gRPC's pooling threshold (mem.NewBuffer keeps a buffer of a
// capacity at or under it out of the pool).
const smallPooled = 2 << 10

// dirtyPool is a mem.BufferPool of buffers whose capacities are powers of
// two from 2^dirtyMinExp to 2^dirtyMaxExp, handed out as they were put
// back (not cleared): for buffers that are written whole before they are
// read. A size above the largest tier gets a buffer of its own.
type dirtyPool struct {
	tiers [dirtyMaxExp - dirtyMinExp + 1]sync.Pool
}

const (
	dirtyMinExp = 10 // 1 KiB: gRPC's pooling threshold
	dirtyMaxExp = 22 // 4 MiB: the default message limit
)

// Get returns a buffer of length size.
func (p *dirtyPool) Get(size int) *[]byte {
	exp := max(bits.Len(uint(max(size, 1)-1)), dirtyMinExp)
	if exp > dirtyMaxExp {
		b := make([]byte, size)
		return &b
	}
	if b, ok := p.tiers[exp-dirtyMinExp].Get().(*[]byte); ok {
		*b = (*b)[:size]
		return b
	}
	b := make([]byte, size, 1<<exp)
	return &b
}

// Put keeps a buffer whose capacity is one of the tiers; others are left
// to the garbage collector.
func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	exp := bits.Len(uint(c)) - 1
	if c == 0 || c != 1<<exp || exp < dirtyMinExp || exp > dirtyMaxExp {
		return
	}
	p.tiers[exp-dirtyMinExp].Put(b)
}

// fixUTF8 replaces invalid UTF-8 in every string of m, however deep.
func fixUTF8(m protoreflect.Message) {
	fix := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			mp := v.Map()
			type entry struct {
				k protoreflect.MapKey
				v protoreflect.Value
			}
			var redo []entry
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					fixUTF8(mv.Message())
				} else if fd.MapValue().Kind() == protoreflect.StringKind && !utf8.ValidString(mv.String()) {
					mv = protoreflect.ValueOfString(fix(mv.String()))
					mp.Set(k, mv)
				}
				if fd.MapKey().Kind() == protoreflect.StringKind && !utf8.ValidString(k.String()) {
					redo = append(redo, entry{k, mv})
				}
				return true
			})
			for _, e := range redo {
				mp.Clear(e.k)
				mp.Set(protoreflect.ValueOfString(fix(e.k.String())).MapKey(), e.v)
			}
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				switch fd.Kind() {
				case protoreflect.MessageKind, protoreflect.GroupKind:
					fixUTF8(l.Get(i).Message())
				case protoreflect.StringKind:
					if s := l.Get(i).String(); !utf8.ValidString(s) {
						l.Set(i, protoreflect.ValueOfString(fix(s)))
					}
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			fixUTF8(v.Message())
		case fd.Kind() == protoreflect.StringKind:
			if s := v.String(); !utf8.ValidString(s) {
				m.Set(fd, protoreflect.ValueOfString(fix(s)))
			}
		}
		return true
	})
}

func (c clientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	limit := c.limit
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	in, ok := v.(*inbound)
	if !ok {
		// Every other message (unary requests, TerminalService input)
		// keeps the message limit; over it, that RPC fails, as with
		// gRPC's own limit.
		if n := data.Len(); n > limit {
			return status.Errorf(codes.ResourceExhausted, "the message is %s, over toold's limit of %s per message", tools.HumanSize(int64(n)), tools.HumanSize(int64(limit)))
		}
		return c.base.Unmarshal(data, v)
	}
	in.msg, in.bad = nil, nil
	if n := data.Len(); n > limit {
		b := peekMessage(data)
		b.err = errdefs.New(errdefs.ErrResourceExhausted,
			"the message is %s, over toold's limit of %s per message; nothing of it was used. Send less in one call (write a large file in parts, with edit_file or several writes)",
			tools.HumanSize(int64(n)), tools.HumanSize(int64(limit)))
		in.bad = b
		return nil
	}
	msg := &pb.ClientMessage{}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := proto.Unmarshal(buf.ReadOnlyData(), msg); err != nil {
		b := scanMessage(buf.ReadOnlyData())
		hint := ""
		if strings.Contains(err.Error(), "UTF-8") {
			hint = ". Strings must be valid UTF-8: send other bytes as Input.data, or encode them (JSON escapes, base64)"
		}
		b.err = errdefs.New(errdefs.ErrInvalidArgument, "the message could not be decoded (%v); nothing of it was used%s", err, hint)
		in.bad = b
		return nil
	}
	in.msg = msg
	return nil
}

// peekMessage reads what it can of an over-long message from its first
// bytes only.
func peekMessage(data mem.BufferSlice) *badMessage {
	var head [4096]byte
	n, _ := io.ReadFull(data.Reader(), head[:])
	return scanMessage(head[:n])
}

// scanMessage reads the kind of a ClientMessage and, for a ToolCall, its
// call_id and name, from b, which may be cut short or malformed: what
// cannot be read stays empty.
func scanMessage(b []byte) *badMessage {
	out := &badMessage{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return out
			}
			b = b[n:]
			continue
		}
		v, n := consumeBytesPrefix(b)
		if n < 0 {
			return out
		}
		if num >= 1 && num <= 5 {
			out.kind = num
			if num == 2 {
				out.callID, out.name = scanCall(v)
			}
			return out
		}
		b = b[n:]
	}
	return out
}

// consumeBytesPrefix is protowire.ConsumeBytes that also accepts a value
// cut short (it returns what there is); n is how far b was consumed, -1 on
// a malformed length.
func consumeBytesPrefix(b []byte) (v []byte, n int) {
	l, m := protowire.ConsumeVarint(b)
	if m < 0 {
		return nil, -1
	}
	rest := b[m:]
	if uint64(len(rest)) < l {
		return rest, len(b)
	}
	return rest[:l], m + int(l)
}

// scanCall reads call_id (1) and name (2) of a ToolCall, each only when
// it is whole and valid UTF-8.
func scanCall(b []byte) (callID, name string) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return
			}
			if utf8.Valid(v) {
				if num == 1 {
					callID = string(v)
				} else {
					name = string(v)
				}
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return
		}
		b = b[n:]
	}
	return
}
