package dialect

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/toold/toold/pkg/tools"
)

// SWE-agent's windowed file viewer (tools/windowed, tools/search,
// tools/windowed_edit_replace): open shows a window of a file and
// remembers it; goto, scroll_up and scroll_down move the window; create
// makes a file and opens it; edit, insert and search_file work on the open
// file. The state is kept per conversation, as SWE-agent keeps it per
// environment (its registry's CURRENT_FILE and FIRST_LINE); the window's
// text is SWE-agent's (windowed_file.py get_window_text):
//
//	[File: PATH (N lines total)]
//	(F more lines above)
//	LINE:TEXT
//	(M more lines below)

// window is SWE-agent's WINDOW (tools/windowed/install.sh): lines shown.
const window = 100

// windowState is a conversation's open file: its path as given, the first
// line shown (0-based, SWE-agent's FIRST_LINE) and its length when last
// shown.
type windowState struct {
	path  string
	first int
	lines int
}

// windowStates holds the open file of each conversation; at most
// maxWindows conversations are kept (the oldest opened is forgotten
// first), so that a daemon serving many conversations does not grow.
type windowStates struct {
	mu    sync.Mutex
	m     map[string]windowState
	order []string
}

const maxWindows = 4096

func (w *windowStates) get(conv string) (windowState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.m[conv]
	return s, ok
}

func (w *windowStates) set(conv string, s windowState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]windowState{}
	}
	if _, ok := w.m[conv]; !ok {
		w.order = append(w.order, conv)
		if len(w.order) > maxWindows {
			delete(w.m, w.order[0])
			w.order = w.order[1:]
		}
	}
	w.m[conv] = s
}

// windows is the open files of every conversation. One per process, like
// the dialects' definitions: a conversation id names one conversation of
// this daemon.
var windows windowStates

// noFile is SWE-agent's answer when no file is open.
const noFile = "No file open. Use the open command first."

// gotoFirst is WindowedFile.goto(line-1, mode="top"): the window starts a
// sixth of a window above the line (Python's int() truncates toward 0).
func gotoFirst(line int) int {
	return int(float64(line-1) - float64(window)/6)
}

// windowRead sets read_file's arguments to read enough lines around first
// (not yet clamped to the file's length) to show the window once the
// length is known.
func windowRead(args map[string]any, path string, first int) {
	start := max(0, first-window)
	args["path"] = path
	args["offset"] = start + 1
	args["limit"] = 2 * window
}

// windowMap is the argument mapping of open, goto, scroll_up and
// scroll_down: the window's file and first line as read_file's path,
// offset and limit. The desired first line travels to the shape in the
// original arguments' copy, recomputed there the same way.
func windowMap(tool string) func(conv string, args map[string]any) ([]tools.Coercion, error) {
	return func(conv string, args map[string]any) ([]tools.Coercion, error) {
		path, first, err := windowTarget(tool, conv, args)
		if err != nil {
			return nil, err
		}
		for k := range args {
			delete(args, k)
		}
		windowRead(args, path, first)
		return []tools.Coercion{{Field: "/" + tool, To: js(map[string]any{"path": path, "offset": args["offset"], "limit": args["limit"]}),
			Rule: fmt.Sprintf("SWE-agent's %s shows a %d-line window of the file: toold reads the lines around it", tool, window)}}, nil
	}
}

// windowTarget is the file and (unclamped) first line a window call shows.
func windowTarget(tool, conv string, args map[string]any) (string, int, error) {
	st, open := windows.get(conv)
	switch tool {
	case "open":
		p, _ := args["path"].(string)
		if p == "" {
			if !open {
				return "", 0, invalid("path", `Usage: open "<file>" [<line_number>]`)
			}
			return st.path, st.first, nil
		}
		line := 0
		if v, ok := args["line_number"]; ok {
			n, isNum := number(v)
			if !isNum {
				return "", 0, invalid("line_number", "Usage: open \"<file>\" [<line_number>]\nError: <line_number> must be a number")
			}
			line = max(int(n), 1)
		} else {
			// SWE-agent opens at the window's current first line (its
			// FIRST_LINE, 0 when nothing was open) as a line number.
			line = st.first
		}
		return p, gotoFirst(line), nil
	case "goto":
		if !open {
			return "", 0, invalid("line_number", noFile)
		}
		n, isNum := number(args["line_number"])
		if !isNum {
			return "", 0, invalid("line_number", "Usage: goto <line>\nError: <line> must be a number")
		}
		if st.lines > 0 && int(n) > st.lines {
			return "", 0, invalid("line_number", "Error: <line> must be less than or equal to %d", st.lines)
		}
		return st.path, gotoFirst(int(n)), nil
	case "scroll_up", "scroll_down":
		if !open {
			return "", 0, invalid("", noFile)
		}
		if tool == "scroll_up" {
			return st.path, st.first - window, nil
		}
		return st.path, st.first + window, nil
	}
	return "", 0, invalid("", "unknown window command %q", tool)
}

// numberedLine is one line of read_file's output: its number, a tab, the
// text.
var numberedLine = regexp.MustCompile(`^ *(\d+)\t(.*)$`)

// windowShape turns read_file's lines into SWE-agent's window and records
// the conversation's open file and first line.
func windowShape(tool string) func(conv string, orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	return func(conv string, orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
		if err != nil || res == nil {
			return res, err
		}
		path, first, terr := windowTarget(tool, conv, orig)
		if terr != nil {
			return res, nil // the state changed under the call: keep toold's answer
		}
		total, known := number(toNumber(res.Structured["total_lines"]))
		if !known {
			return res, nil // too large to count: toold's answer says how to read on
		}
		text, st := renderWindow(res.Text, path, first, int(total))
		var warn string
		if tool == "open" {
			if v, ok := orig["line_number"]; ok {
				if n, _ := number(v); int(n) > int(total) {
					warn = fmt.Sprintf("Warning: <line_number> (%d) is greater than the number of lines in the file (%d)\nWarning: Setting <line_number> to %d\n", int(n), int(total), int(total))
				} else if n < 1 {
					warn = fmt.Sprintf("Warning: <line_number> (%d) is less than 1\nWarning: Setting <line_number> to 1\n", int(n))
				}
			}
		}
		windows.set(conv, st)
		return withText(res, warn+text), nil
	}
}

// renderWindow is get_window_text(line_numbers, status_line, pre_post_line)
// for a file of total lines whose window starts at first (clamped as
// SWE-agent clamps it), from read_file's numbered lines.
func renderWindow(readText, path string, first, total int) (string, windowState) {
	lines := map[int]string{}
	for _, l := range strings.Split(readText, "\n") {
		if m := numberedLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			lines[n] = m[2]
		}
	}
	first = max(0, min(first, total-window))
	end := min(first+window-1, total-1)
	var b strings.Builder
	fmt.Fprintf(&b, "[File: %s (%d lines total)]", path, total)
	if first > 0 {
		fmt.Fprintf(&b, "\n(%d more lines above)", first)
	}
	for i := first; i <= end; i++ {
		t, ok := lines[i+1]
		if !ok {
			fmt.Fprintf(&b, "\n(line %d not read: call goto %d)", i+1, i+1)
			break
		}
		fmt.Fprintf(&b, "\n%d:%s", i+1, t)
	}
	if end < total-1 {
		fmt.Fprintf(&b, "\n(%d more lines below)", total-end-1)
	}
	return b.String(), windowState{path: path, first: first, lines: total}
}

// createShape: create opens the new, empty file.
func createShape(conv string, orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	p, _ := orig["filename"].(string)
	windows.set(conv, windowState{path: p})
	return withText(res, fmt.Sprintf("[File: %s (0 lines total)]", p)), nil
}

// openFileMap maps a call on the open file (edit, insert, search_file
// without file): the file comes from the conversation's window.
func openFileMap(field string, then func(st windowState, args map[string]any) ([]tools.Coercion, error)) func(conv string, args map[string]any) ([]tools.Coercion, error) {
	return func(conv string, args map[string]any) ([]tools.Coercion, error) {
		st, open := windows.get(conv)
		if !open {
			return nil, invalid(field, "No file opened. Either `open` or `create` a file first.")
		}
		return then(st, args)
	}
}

// windowEdit is windowed_edit_replace's edit on the open file: toold's
// edit_file replaces search with replace — the one occurrence in the file
// (SWE-agent's first occurrence in the window), or every one with
// replace-all.
var windowEdit = openFileMap("search", func(st windowState, args map[string]any) ([]tools.Coercion, error) {
	search, _ := args["search"].(string)
	replace, _ := args["replace"].(string)
	if _, ok := args["search"]; !ok {
		return nil, invalid("search", "edit needs search (the text to replace) and replace")
	}
	if search == replace {
		return nil, invalid("replace", "Your search and replace strings are the same. No changes were made. Please modify your search or replace strings.")
	}
	all := false
	if v, ok := args["replace-all"]; ok {
		all, _ = boolOf(v)
	}
	for k := range args {
		delete(args, k)
	}
	args["path"], args["old_string"], args["new_string"] = st.path, search, replace
	if all {
		args["replace_all"] = true
	}
	return []tools.Coercion{{Field: "/search", To: js(st.path), Rule: "SWE-agent's edit changes the open file: toold's edit_file of it, search as old_string (unique in the file unless replace-all), replace as new_string"}}, nil
})

// windowInsert is windowed_edit_replace's insert: after line, or at the
// end of the open file (its length when last shown).
var windowInsert = openFileMap("text", func(st windowState, args map[string]any) ([]tools.Coercion, error) {
	text, ok := args["text"].(string)
	if !ok {
		return nil, invalid("text", "insert needs text, the lines to insert")
	}
	line := st.lines
	rule := fmt.Sprintf("SWE-agent's insert adds text at the end of the open file (line %d when last shown): toold's str_replace_based_edit_tool insert", st.lines)
	if v, has := args["line"]; has {
		n, isNum := number(v)
		if !isNum || n < 0 {
			return nil, invalid("line", "line is the line number to insert the text after")
		}
		line = int(n)
		rule = "SWE-agent's insert adds text after line: toold's str_replace_based_edit_tool insert"
	}
	for k := range args {
		delete(args, k)
	}
	args["command"], args["path"], args["insert_line"], args["new_str"] = "insert", st.path, line, text
	return []tools.Coercion{{Field: "/text", To: js(st.path), Rule: rule}}, nil
})

// editDone is windowed_edit_replace's answer to a successful edit
// (_SINGLE_EDIT_SUCCESS_MSG).
const editDone = `Text replaced. Please review the changes and make sure they are correct:

1. The edited file is correctly indented
2. The edited file does not contain duplicate lines
3. The edit does not break existing functionality

Edit the file again if necessary.`

// editRangeDone is windowed_edit_linting's answer to a successful edit
// (_EDIT_SUCCESS_MSG).
const editRangeDone = `File updated. Please review the changes and make sure they are correct
(correct indentation, no duplicate lines, etc). Edit the file again if necessary.`

// editShape answers a successful edit as SWE-agent does (the line-range
// form's message or the search/replace form's), then toold's account of
// the change (SWE-agent shows the window; toold shows the diff).
func editShape(conv string, orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	msg := editDone
	if _, ok := orig["replacement_text"]; ok {
		msg = editRangeDone
	}
	return withText(res, msg+"\n"+res.Text), nil
}

// windowEditRange is windowed_edit_linting's edit START:END: the lines of
// the open file replaced, as toold's replace_lines.
var windowEditRange = openFileMap("replacement_text", func(st windowState, args map[string]any) ([]tools.Coercion, error) {
	text, ok := args["replacement_text"].(string)
	start, okS := number(args["start_line"])
	end, okE := number(args["end_line"])
	if !ok || !okS || !okE {
		return nil, invalid("replacement_text", "Usage: edit <start_line>:<end_line>\n<replacement_text>\nend_of_edit")
	}
	for k := range args {
		delete(args, k)
	}
	args["operation"] = "replace_lines"
	args["path"], args["start_line"], args["end_line"], args["new_text"] = st.path, int(start), int(end), text
	return []tools.Coercion{{Field: "/replacement_text", To: js(st.path), Rule: fmt.Sprintf("SWE-agent's edit %d:%d replaces those lines of the open file: toold's replace_lines", int(start), int(end))}}, nil
})

// searchFileMap is search_file: in file, or in the open file.
func searchFileMap(conv string, args map[string]any) ([]tools.Coercion, error) {
	if _, ok := args["file"]; ok {
		return steps(literalTerm, rename("file", "path"))(args)
	}
	st, open := windows.get(conv)
	if !open {
		return nil, invalid("file", "No file open. Use the open command first, or give file.")
	}
	cs, err := literalTerm(args)
	if err != nil {
		return cs, err
	}
	args["path"] = st.path
	return append(cs, tools.Coercion{Field: "/file", To: js(st.path), Rule: "search_file without file searches the open file"}), nil
}
