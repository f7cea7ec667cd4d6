package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

// callView shows the events of a call to the person or program running
// toolctl. The call loop calls event and note from one goroutine; close is
// called once, last.
type callView interface {
	// event shows one server event, in stream order. The view of a
	// ToolCallEnd prints the result: content on stdout, errors on stderr.
	event(ev *pb.ServerEvent)
	// note shows a message of toolctl itself on stderr ("canceling").
	note(msg string)
	// hold(true) takes the live status line off stderr and keeps it off,
	// so that a prompt can use the terminal; hold(false) brings it back.
	hold(on bool)
	// close stops live rendering and releases the view.
	close()
}

// Rates of the live views.
const (
	// statusInterval is how often the human status line is redrawn.
	statusInterval = 100 * time.Millisecond
	// plainProgressInterval is the least time between two progress lines
	// in plain mode; messages in between are dropped.
	plainProgressInterval = time.Second
)

// newCallView returns the view for mode.
func (a *app) newCallView(mode outputMode) callView {
	switch mode {
	case modeJSON:
		return &jsonView{stdout: a.stdout, stderr: a.stderr}
	case modeHuman:
		return newTextView(a, true)
	}
	return newTextView(a, false)
}

// jsonView prints every event as one protojson line on stdout. Notes and
// a failed call's error line go to stderr.
type jsonView struct {
	stdout, stderr io.Writer
}

func (v *jsonView) event(ev *pb.ServerEvent) {
	b, err := protojson.Marshal(ev)
	if err != nil {
		fmt.Fprintf(v.stderr, "toolctl: cannot print event %d: %v\n", ev.GetSeq(), err)
		return
	}
	_, _ = v.stdout.Write(append(b, '\n'))
	if e := ev.GetEnd().GetResult().GetError(); e != nil {
		writeToolError(v.stderr, e)
	}
}

func (v *jsonView) note(msg string) { writeLine(v.stderr, msg) }

func (v *jsonView) hold(bool) {}

func (v *jsonView) close() {}

// textView is the view for people: the display line, progress, output
// chunks as they arrive, and the result. In live (human) mode it keeps a
// status line at the bottom of stderr, redrawn at most every statusInterval
// by its own goroutine; in plain mode it writes lines, with progress
// messages at most every plainProgressInterval.
type textView struct {
	stdout, stderr io.Writer
	live           bool
	isTerminal     func(io.Writer) bool
	width          func() int
	now            func() time.Time

	mu       sync.Mutex
	display  string    // from ToolCallStart
	started  time.Time // when ToolCallStart arrived
	message  string    // the latest progress message
	fraction float64   // the latest fraction; < 0 when unknown
	frame    int       // spinner frame
	shown    bool      // a status line is on screen
	// partial is the terminal whose last output chunk did not end its
	// line; the status line waits, so as not to wipe that line.
	partial  io.Writer
	lastLine time.Time // plain: when the last progress line was printed
	lastMsg  string    // plain: the last progress message printed
	ended    bool
	held     bool // a prompt uses the terminal: no status line
	// streamed is set once output chunks arrived: the output is on the
	// terminal already, so the result (which repeats it for the model) is
	// summed up by its first line on stderr.
	streamed bool

	stop chan struct{} // closed by close
	done chan struct{} // closed when the render goroutine has exited
}

func newTextView(a *app, live bool) *textView {
	v := &textView{
		stdout:     a.stdout,
		stderr:     a.stderr,
		live:       live,
		isTerminal: a.isTerminal,
		width:      func() int { return a.terminalWidth(a.stderr) },
		now:        time.Now,
		fraction:   -1,
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	if live {
		go v.render()
	} else {
		close(v.done)
	}
	return v
}

// render redraws the status line until close.
func (v *textView) render() {
	defer close(v.done)
	t := time.NewTicker(statusInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.mu.Lock()
			v.frame++
			v.drawLocked()
			v.mu.Unlock()
		}
	}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// drawLocked draws the status line, replacing the one on screen.
func (v *textView) drawLocked() {
	if v.display == "" || v.ended || v.held || v.partial != nil {
		return
	}
	var b strings.Builder
	b.WriteString(spinner[v.frame%len(spinner)])
	b.WriteString(" ")
	b.WriteString(v.display)
	if v.message != "" {
		b.WriteString(" · ")
		b.WriteString(v.message)
	}
	if v.fraction >= 0 {
		fmt.Fprintf(&b, " %d%%", int(v.fraction*100))
	}
	if d := v.now().Sub(v.started); d >= time.Second {
		fmt.Fprintf(&b, " (%.0fs)", d.Seconds())
	}
	line := strings.ReplaceAll(b.String(), "\n", " ")
	if w := v.width(); w > 1 {
		line = truncate(line, w-1) // never wrap: \r would not reach back
	}
	fmt.Fprintf(v.stderr, "\r\x1b[2K%s", line)
	v.shown = true
}

// clearLocked removes the status line from the screen.
func (v *textView) clearLocked() {
	if v.shown {
		fmt.Fprint(v.stderr, "\r\x1b[2K")
		v.shown = false
	}
}

func (v *textView) event(ev *pb.ServerEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e := ev.GetEvent().(type) {
	case *pb.ServerEvent_Start:
		v.display = e.Start.GetDisplay()
		if v.display == "" {
			v.display = "Calling " + e.Start.GetRequestedName()
		}
		v.started = v.now()
		if !v.live {
			writeLine(v.stderr, v.display)
		}
		// Live: the next redraw shows it, so a fast call does not flicker.
	case *pb.ServerEvent_Progress:
		v.progressLocked(e.Progress)
	case *pb.ServerEvent_Rejected:
		v.noteLocked(fmt.Sprintf("toold rejected a message: %s: %s", codeName(e.Rejected.GetCode()), e.Rejected.GetMessage()))
	case *pb.ServerEvent_End:
		v.endLocked(e.End.GetResult())
	}
}

func (v *textView) progressLocked(p *pb.Progress) {
	if out := p.GetOutput(); out != nil && len(out.GetData()) > 0 {
		v.streamed = true
		w := v.stdout
		if out.GetStream() == pb.OutputChunk_STREAM_STDERR {
			w = v.stderr
		}
		v.clearLocked()
		_, _ = w.Write(out.GetData())
		if v.live && v.isTerminal(w) {
			if out.GetData()[len(out.GetData())-1] == '\n' {
				v.partial = nil
			} else {
				v.partial = w
			}
		}
	}
	if msg := strings.TrimSpace(p.GetMessage()); msg != "" || p.Fraction != nil {
		if msg != "" {
			v.message = msg
		}
		v.fraction = -1
		if p.Fraction != nil {
			v.fraction = min(max(p.GetFraction(), 0), 1)
		}
		if v.live || msg == "" || msg == v.lastMsg {
			return // the status line shows it at the next redraw
		}
		if now := v.now(); v.lastLine.IsZero() || now.Sub(v.lastLine) >= plainProgressInterval {
			v.lastLine, v.lastMsg = now, msg
			if v.fraction >= 0 {
				msg += fmt.Sprintf(" (%d%%)", int(v.fraction*100))
			}
			writeLine(v.stderr, "  "+msg)
		}
	}
}

func (v *textView) endLocked(res *pb.ToolResult) {
	v.ended = true
	if v.live {
		v.clearLocked()
		if v.partial != nil {
			_, _ = io.WriteString(v.partial, "\n")
			v.partial = nil
		}
		mark := "✓"
		if !res.GetSuccess() {
			mark = "✗"
		}
		line := mark + " " + v.display
		if d := res.GetDuration(); d != nil {
			line += " (" + formatDuration(d.AsDuration()) + ")"
		}
		writeLine(v.stderr, line)
	}
	if v.streamed {
		writeStreamedResult(v.stderr, res)
		return
	}
	writeResult(v.stdout, v.stderr, res)
}

// writeStreamedResult sums up the result of a call whose output was already
// shown as it streamed: the first line of its content (a command's status
// line, "exit code 0 · 3ms · ..."), and the error when it failed.
func writeStreamedResult(stderr io.Writer, res *pb.ToolResult) {
	for _, c := range res.GetContent() {
		if t := c.GetText(); t != "" {
			first, _, _ := strings.Cut(t, "\n")
			if e := res.GetError(); e == nil || first != "Error: "+e.GetMessage() {
				writeLine(stderr, first)
			}
			break
		}
	}
	if e := res.GetError(); e != nil {
		writeToolError(stderr, e)
	}
}

func (v *textView) note(msg string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.noteLocked(msg)
}

func (v *textView) noteLocked(msg string) {
	v.clearLocked()
	if v.partial != nil {
		_, _ = io.WriteString(v.partial, "\n")
		v.partial = nil
	}
	writeLine(v.stderr, msg)
}

func (v *textView) hold(on bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.held = on
	if on {
		v.clearLocked()
		if v.partial != nil {
			_, _ = io.WriteString(v.partial, "\n")
			v.partial = nil
		}
	}
}

func (v *textView) close() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	v.clearLocked()
	v.mu.Unlock()
}

// writeResult prints a call's result: its content on stdout, and on stderr
// a note when it was cut and the error when it failed.
func writeResult(stdout, stderr io.Writer, res *pb.ToolResult) {
	e := res.GetError()
	for _, c := range res.GetContent() {
		switch k := c.GetKind().(type) {
		case *pb.Content_Text:
			if e != nil && k.Text == "Error: "+e.GetMessage() {
				continue // toold's stand-in for a failed call's empty content; the error line says it
			}
			writeLine(stdout, k.Text)
		case *pb.Content_Json:
			writeLine(stdout, k.Json)
		case *pb.Content_Blob:
			fmt.Fprintf(stderr, "(%s content of %d bytes not shown; use --json)\n", k.Blob.GetMimeType(), len(k.Blob.GetData()))
		}
	}
	if t := res.GetTruncation(); t.GetTruncated() {
		var parts []string
		if t.GetTotalBytes() > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d bytes shown", t.GetShownBytes(), t.GetTotalBytes()))
		}
		if t.GetShownItems() > 0 {
			if t.GetTotalItems() > 0 {
				parts = append(parts, fmt.Sprintf("%d of %d items", t.GetShownItems(), t.GetTotalItems()))
			} else {
				parts = append(parts, fmt.Sprintf("%d items (more not counted)", t.GetShownItems()))
			}
		}
		if t.GetContinuation() != "" {
			parts = append(parts, "continue with "+t.GetContinuation())
		}
		fmt.Fprintf(stderr, "note: the result was cut for the model: %s\n", strings.Join(parts, "; "))
	}
	if e != nil {
		writeToolError(stderr, e)
	}
}

// writeToolError prints "error: CODE: message" and the details that help
// fix the call: suggestions, the offending field, the rule.
func writeToolError(w io.Writer, e *pb.ToolError) {
	var b strings.Builder
	fmt.Fprintf(&b, "error: %s: %s\n", codeName(e.GetCode()), e.GetMessage())
	if s := e.GetSuggestions(); len(s) > 0 {
		fmt.Fprintf(&b, "  suggestions: %s\n", strings.Join(s, ", "))
	}
	if f := e.GetField(); f != "" {
		fmt.Fprintf(&b, "  field: %s\n", f)
	}
	if r := e.GetRule(); r != "" {
		fmt.Fprintf(&b, "  rule: %s\n", r)
	}
	_, _ = io.WriteString(w, b.String())
}

// codeName is an error code without its enum prefix: "TOOL_NOT_FOUND".
func codeName(c pb.ErrorCode) string {
	return strings.TrimPrefix(c.String(), "ERROR_CODE_")
}

// formatDuration rounds d for people: 850µs, 12ms, 1.25s, 2m3s.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
