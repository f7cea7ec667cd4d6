package fileops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/toold/toold/pkg/tools/fileops/internal/scan"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/workspace"
)

var readFileOp = &operation{
	name: "read_file",
	description: "Read a text file. Returns its lines numbered like cat -n (number, tab, line), " +
		"starting at offset and at most limit lines; long output is cut and ends with a note " +
		"saying which offset continues. Binary files are reported, not dumped.",
	risk:     tools.RiskLow,
	fast:     true,
	schema:   readFileSchema,
	describe: (*FileOperations).describeReadFile,
	run:      (*FileOperations).readFile,
}

func readFileSchema(l tools.Limits) string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "minLength": 1,
      "description": "Path of the file, relative to the workspace root (an absolute path inside the workspace also works)."
    },
    "offset": {
      "type": "integer",
      "minimum": 1,
      "default": 1,
      "description": "1-based line number to start reading at. Use the offset a truncated read suggests to continue."
    },
    "limit": {
      "type": "integer",
      "minimum": 1,
      "description": "Maximum number of lines to return. Without it, up to %d lines are returned. Output is capped at %s either way."
    }
  },
  "required": ["path"],
  "additionalProperties": false
}`, l.ReadLines, tools.HumanSize(int64(l.ReadBytes)))
}

type readFileArgs struct {
	Path   string `json:"path"`
	Offset intArg `json:"offset"`
	Limit  intArg `json:"limit"`
}

// bind decodes the call's arguments into a as bind does, without its JSON
// round trip for the values a decoded call holds (a string path, integers
// as json.Number, float64 or int, null); any other value, or a key that
// differs from a field's name only by case, takes bind itself, so that
// what is accepted and every error read the same.
func (a *readFileArgs) bind(call *tools.Call) error {
	for k, v := range call.Args {
		ok := true
		switch k {
		case "path":
			if v != nil {
				a.Path, ok = v.(string)
			}
		case "offset":
			ok = a.Offset.set(v)
		case "limit":
			ok = a.Limit.set(v)
		default:
			ok = !strings.EqualFold(k, "path") && !strings.EqualFold(k, "offset") && !strings.EqualFold(k, "limit")
		}
		if !ok {
			*a = readFileArgs{}
			return bind(call, a)
		}
	}
	return nil
}

func (f *FileOperations) describeReadFile(call *tools.Call) tools.Effect {
	p, _ := call.Args["path"].(string)
	return tools.Effect{Display: "Reading file: " + clip(p), Reads: []string{p}}
}

// countRestMax bounds how much of a file read_file reads past what it shows
// just to count the file's lines: beyond it, the total is reported unknown.
const countRestMax = 16 << 20

// readBufSize is the size of read_file's read buffer; a longer line is
// streamed, keeping only the head that can be shown.
const readBufSize = 64 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// stop reasons of a read.
const (
	readEOF     = iota // the end of the file
	readLimit          // the caller's limit
	readLineCap        // Limits.ReadLines
	readByteCap        // Limits.ReadBytes
	readCanceled
)

func (f *FileOperations) readFile(ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
	var args readFileArgs
	if err := args.bind(call); err != nil {
		return nil, err
	}
	switch {
	case args.Path == "":
		return nil, errdefs.Invalid("/path", "required", "path is required: the file to read, relative to the workspace root")
	case args.Offset < 0:
		return nil, errdefs.Invalid("/offset", "minimum", "offset must be a line number of 1 or more, not %d", args.Offset)
	case args.Limit < 0:
		return nil, errdefs.Invalid("/limit", "minimum", "limit must be 1 or more, not %d", args.Limit)
	}
	offset := max(int(args.Offset), 1)
	t, err := f.locateJudgedRead(call, "path", args.Path)
	if err != nil {
		return nil, err
	}
	defer t.close()
	rel := t.show
	// A FIFO or device is refused before it is opened (readTarget.open),
	// with its type in st; what is opened is checked again.
	fd, st, err := t.open()
	if errors.Is(err, errNotRegular) {
		return nil, notReadable(args.Path, st.Mode)
	}
	if err != nil {
		return nil, t.mapErr(err)
	}
	// The descriptor is read directly (fdReader), not through an os.File:
	// a file read once with blocking reads needs none of what os.File adds
	// (poller registration, finalizer, its own fstat and fcntl calls).
	defer unix.Close(fd)
	if err := notReadable(args.Path, st.Mode); err != nil {
		return nil, err
	}
	size := st.Size

	bufp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bufp)
	lr := &lineReader{r: fdReader{fd: fd, name: rel}, buf: *bufp}
	head := lr.peek(scan.SniffLen)
	if lr.err != nil {
		return nil, workspace.MapError(args.Path, lr.err)
	}
	if mt, bin := scan.BinaryKind(rel, head); bin {
		return &tools.Result{
			Text: fmt.Sprintf("%s is a binary file (%s, %s); read_file shows text files only.", rel, mt, tools.HumanSize(size)),
			Structured: map[string]any{
				"path": rel, "size": size, "binary": true, "mime_type": mt,
			},
		}, nil
	}

	// Skip to offset.
	line := 1
	for line < offset {
		if _, _, ok := lr.next(0); !ok {
			break
		}
		line++
		if line&0xffff == 0 && ctx.Err() != nil {
			return nil, ctxError(ctx, "read_file")
		}
	}
	if lr.err != nil {
		return nil, workspace.MapError(args.Path, lr.err)
	}
	if line < offset || (offset > 1 && !lr.more()) {
		if lr.err != nil {
			return nil, workspace.MapError(args.Path, lr.err)
		}
		return nil, errdefs.Invalid("/offset", "maximum",
			"offset %d is past the end of %s, which has %s; use an offset from 1 to %d",
			offset, rel, plural(line-1, "line", "lines"), max(line-1, 1))
	}

	// Read the lines to show.
	maxLines := int(args.Limit)
	if maxLines == 0 {
		maxLines = f.limits.ReadLines
	}
	var (
		out        strings.Builder
		shown      int   // lines shown
		shownBytes int64 // bytes of the file those lines show
		cutLines   int   // lines cut at LineChars
		unshown    int   // lines read but not shown (at most one, over the byte cap)
		stop       = readEOF
	)
	keep := scan.MaxHeadBytes(f.limits.LineChars)
	// Room for the whole file plus line numbers, up to the byte cap.
	out.Grow(int(min(size+size/8+64, int64(f.limits.ReadBytes)+64)))
	var entry []byte
	for {
		if shown == maxLines {
			if lr.more() {
				stop = readLineCap
				if args.Limit > 0 {
					stop = readLimit
				}
			}
			break
		}
		if shown&0xfff == 0xfff && ctx.Err() != nil {
			stop = readCanceled
			break
		}
		text, total, ok := lr.next(keep)
		if !ok {
			break
		}
		var n int
		var cut bool
		entry = appendLineNumber(entry[:0], line)
		entry, n, cut = appendCutLine(entry, text, total, f.limits.LineChars)
		entry = append(entry, '\n')
		if shown > 0 && out.Len()+len(entry) > f.limits.ReadBytes {
			stop, unshown = readByteCap, 1
			break
		}
		out.Write(entry)
		shown++
		line++
		shownBytes += int64(n)
		if cut {
			cutLines++
		} else if lr.lastHadNewline {
			shownBytes++ // the newline
		}
	}
	if stop == readCanceled {
		return nil, ctxError(ctx, "read_file")
	}
	if lr.err != nil {
		return nil, workspace.MapError(args.Path, lr.err)
	}
	if size == 0 && shown == 0 {
		return &tools.Result{
			Text:       fmt.Sprintf("%s is empty (0 bytes).", rel),
			Structured: map[string]any{"path": rel, "size": size, "total_lines": 0, "start_line": 0, "end_line": 0},
		}, nil
	}

	// Count the lines of the file when that is cheap.
	totalLines, known := line-1, stop == readEOF
	if !known && size-lr.consumed <= countRestMax {
		rest, err := lr.countRest()
		if err == nil {
			totalLines, known = line-1+unshown+rest, true
		}
	}
	endLine := offset + shown - 1
	structured := map[string]any{"path": rel, "size": size, "start_line": offset, "end_line": endLine}
	if known {
		structured["total_lines"] = totalLines
		// Whether the file ends with a newline: agents that count lines by
		// splitting on newlines (Claude Code, gemini-cli) count one more.
		structured["final_newline"] = lr.lastHadNewline
	}
	res := &tools.Result{Structured: structured}

	of := fmt.Sprintf("of a %s file", tools.HumanSize(size))
	if known {
		of = "of " + fmt.Sprint(totalLines)
	}
	next := fmt.Sprintf("call read_file with offset=%d", endLine+1)
	var notes []string
	switch stop {
	case readLimit:
		notes = append(notes, fmt.Sprintf("[Showing lines %d-%d %s. To read more, %s.]", offset, endLine, of, next))
	case readLineCap:
		notes = append(notes, fmt.Sprintf("[Output truncated at %d lines: showing lines %d-%d %s. To continue, %s.]",
			f.limits.ReadLines, offset, endLine, of, next))
	case readByteCap:
		notes = append(notes, fmt.Sprintf("[Output truncated at %s: showing lines %d-%d %s. To continue, %s (with a smaller limit if lines are long).]",
			tools.HumanSize(int64(f.limits.ReadBytes)), offset, endLine, of, next))
	}
	if cutLines > 0 {
		verb := "were"
		if cutLines == 1 {
			verb = "was"
		}
		notes = append(notes, fmt.Sprintf("[%s longer than %d characters %s cut.]",
			plural(cutLines, "line", "lines"), f.limits.LineChars, verb))
	}
	if stop == readLineCap || stop == readByteCap || cutLines > 0 {
		t := &tools.Truncation{
			ShownBytes: uint64(shownBytes),
			TotalBytes: uint64(size),
			ShownItems: uint64(shown),
		}
		if known {
			t.TotalItems = uint64(totalLines)
		}
		if stop != readEOF {
			t.Continuation = next
		}
		res.Truncation = t
	}
	if len(notes) > 0 {
		out.WriteString("\n")
		out.WriteString(strings.Join(notes, "\n"))
	}
	res.Text = out.String()
	return res, nil
}

// notReadable is read_file's error for given, a file of the type mode
// (S_IFMT bits), or nil when it is a regular file.
func notReadable(given string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		return errdefs.Failed("%q is a directory, not a file; use list_dir to see what it contains", given)
	}
	return errdefs.Failed("%q is not a regular file (%s); read_file reads regular files only", given, typeName(scan.StatType(mode)))
}

// typeName names the type of a file that is not regular.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "a special file"
}

// fdReader reads the open descriptor fd, named name in errors, with
// blocking reads.
type fdReader struct {
	fd   int
	name string
}

// Read implements io.Reader for the descriptor: io.EOF at the end.
func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(r.fd, p)
		switch err {
		case nil:
			if n == 0 && len(p) > 0 {
				return 0, io.EOF
			}
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			// The file was opened non-blocking (so that a FIFO could not
			// hang the open); a regular file reads the same either way,
			// unless its filesystem honours the flag: then read blocking.
			if unix.SetNonblock(r.fd, false) == nil {
				continue
			}
		}
		return 0, &os.PathError{Op: "read", Path: r.name, Err: err}
	}
}

// lineReader reads lines from r through a fixed buffer, so a file of any
// size, and a line of any length, is read in bounded memory.
type lineReader struct {
	r              fdReader
	buf            []byte
	start, end     int // unread data is buf[start:end]
	eof            bool
	err            error
	consumed       int64  // bytes of the file returned as lines so far
	long           []byte // head of a line longer than buf
	lastHadNewline bool   // the last line returned ended with '\n'
}

// fill reads more data after the unread data, moving it to the front first.
func (lr *lineReader) fill() {
	if lr.eof || lr.err != nil {
		return
	}
	if lr.start > 0 {
		lr.end = copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.start = 0
	}
	if lr.end == len(lr.buf) {
		return
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	lr.end += n
	switch {
	case err == io.EOF:
		lr.eof = true
	case err != nil:
		lr.err = err
	case n == 0:
		lr.eof = true // a reader that returns 0, nil forever would spin
	}
}

// peek returns up to n bytes of unread data without consuming them.
func (lr *lineReader) peek(n int) []byte {
	for lr.end-lr.start < n && !lr.eof && lr.err == nil && lr.end-lr.start < len(lr.buf) {
		lr.fill()
	}
	return lr.buf[lr.start:min(lr.end, lr.start+n)]
}

// more reports whether unread data remains.
func (lr *lineReader) more() bool {
	if lr.start == lr.end {
		lr.fill()
	}
	return lr.start < lr.end
}

// next returns the next line without its newline. line holds the line, or
// at least its first keep bytes when the line is longer than the buffer; it
// is valid until the next call. total is the line's length in bytes. ok is
// false at the end of the file or on an error (in lr.err).
func (lr *lineReader) next(keep int) (line []byte, total int, ok bool) {
	long := false
	for {
		data := lr.buf[lr.start:lr.end]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			lr.start += i + 1
			lr.consumed += int64(i + 1)
			lr.lastHadNewline = true
			if long {
				lr.keepHead(data[:i], keep)
				return lr.long, total + i, true
			}
			return data[:i], i, true
		}
		if lr.eof || lr.err != nil {
			if len(data) == 0 && !long {
				return nil, 0, false
			}
			lr.start = lr.end
			lr.consumed += int64(len(data))
			lr.lastHadNewline = false
			if long {
				lr.keepHead(data, keep)
				return lr.long, total + len(data), true
			}
			return data, len(data), true
		}
		if lr.start == 0 && lr.end == len(lr.buf) { // a line longer than the buffer
			if !long {
				long, lr.long = true, lr.long[:0]
			}
			lr.keepHead(data, keep)
			total += len(data)
			lr.consumed += int64(len(data))
			lr.start = lr.end
		}
		lr.fill()
	}
}

func (lr *lineReader) keepHead(p []byte, keep int) {
	if n := keep - len(lr.long); n > 0 {
		lr.long = append(lr.long, p[:min(n, len(p))]...)
	}
}

// countRest counts the lines of the unread data, a last line without a
// newline included; lastHadNewline then tells whether the file's last line
// ended with one.
func (lr *lineReader) countRest() (int, error) {
	lines, last := 0, byte('\n')
	for {
		data := lr.buf[lr.start:lr.end]
		lines += bytes.Count(data, []byte{'\n'})
		if len(data) > 0 {
			last = data[len(data)-1]
			lr.lastHadNewline = last == '\n'
		}
		lr.start = lr.end
		if lr.eof || lr.err != nil {
			break
		}
		lr.fill()
	}
	if lr.err != nil {
		return 0, lr.err
	}
	if last != '\n' {
		lines++
	}
	return lines, nil
}
