package textcalls

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// sweCommand is one of SWE-agent's commands as its tool bundles define it
// (tools/search, tools/windowed, tools/windowed_edit_*, tools/submit,
// tools/edit_anthropic of SWE-agent/SWE-agent): its signature and the
// names of its positional arguments, in order.
type sweCommand struct {
	signature, doc string
	args           []string // argument names; a trailing "?" marks optional
	ints           []string // arguments that are integers
}

// sweCommands are the commands SWE-agent's models write, by name. Any other
// command line is run by bash.
var sweCommands = map[string]sweCommand{
	"find_file":   {"find_file <file_name> [<dir>]", "finds all files with the given name or pattern in dir", []string{"file_name", "dir?"}, nil},
	"search_dir":  {"search_dir <search_term> [<dir>]", "searches for search_term in all files in dir", []string{"search_term", "dir?"}, nil},
	"search_file": {"search_file <search_term> [<file>]", "searches for search_term in file", []string{"search_term", "file?"}, nil},
	"open":        {"open \"<path>\" [<line_number>]", "opens the file at the given path, around line_number", []string{"path", "line_number?"}, []string{"line_number"}},
	"goto":        {"goto <line_number>", "moves the window to show line_number", []string{"line_number"}, []string{"line_number"}},
	"scroll_up":   {"scroll_up", "moves the window up 100 lines", nil, nil},
	"scroll_down": {"scroll_down", "moves the window down 100 lines", nil, nil},
	"create":      {"create <filename>", "creates and opens a new file with the given name", []string{"filename"}, nil},
	"submit":      {"submit", "submits the current changes", nil, nil},
	"edit":        {"edit <start_line>:<end_line>\n<replacement_text>\nend_of_edit", "replaces lines start_line through end_line of the open file with replacement_text (or: edit <search> <replace>)", nil, nil},
	"insert":      {"insert <text> [<line>]", "inserts text after line of the open file (at its end without line)", []string{"text", "line?"}, []string{"line"}},
}

// findSWEAgent finds the action of SWE-agent's thought/action format: the
// last ``` block of the text (SWE-agent's ThoughtActionParser takes the
// last one), holding one command. Auto-detection (strict) takes only a
// block whose command is one of SWE-agent's own; with the format named, any
// other command line is a call to bash.
func findSWEAgent(text string) []Call { return sweAgentCalls(text, false) }

func findSWEAgentStrict(text string) []Call { return sweAgentCalls(text, true) }

func sweAgentCalls(text string, strict bool) []Call {
	blocks := fences(text, "", "bash", "sh", "shell")
	if len(blocks) == 0 {
		return nil
	}
	b := blocks[len(blocks)-1]
	body := strings.TrimSpace(b.body)
	if body == "" {
		return nil
	}
	word := body
	if i := strings.IndexAny(body, " \t\n"); i >= 0 {
		word = body[:i]
	}
	cmd, known := sweCommands[word]
	if !known {
		if strict {
			return nil
		}
		// A tool of the listing as "NAME {json}" (see sweAgentPrompt).
		if rest := strings.TrimSpace(body[len(word):]); strings.HasPrefix(rest, "{") && !strings.Contains(word, "/") {
			if end, ok := scanValue(rest, 0); ok && strings.TrimSpace(rest[end:]) == "" {
				return []Call{{Name: word, Arguments: rest, Start: b.start, End: b.end}}
			}
		}
		args, _ := json.Marshal(map[string]string{"command": body})
		return []Call{{Name: "bash", Arguments: string(args), Start: b.start, End: b.end}}
	}
	rest := strings.TrimSpace(body[len(word):])
	args, err := sweArguments(word, cmd, rest)
	if err != "" {
		return []Call{errCall(b.start, b.end, "%s: %s (signature: %s)", word, err, cmd.signature)}
	}
	j, _ := json.Marshal(args)
	return []Call{{Name: word, Arguments: string(j), Start: b.start, End: b.end}}
}

// sweArguments reads a command's arguments as SWE-agent does: shell words,
// or edit's "START:END" line followed by the text and end_of_edit.
func sweArguments(name string, cmd sweCommand, rest string) (map[string]any, string) {
	args := map[string]any{}
	if name == "edit" {
		first, body, _ := strings.Cut(rest, "\n")
		if s, e, ok := strings.Cut(strings.TrimSpace(first), ":"); ok && isDigits(s) && isDigits(e) {
			text, ok := strings.CutSuffix(strings.TrimRight(body, " \t\n"), "end_of_edit")
			if !ok {
				return nil, "the replacement text must end with a line end_of_edit"
			}
			start, _ := strconv.Atoi(s)
			end, _ := strconv.Atoi(e)
			args["start_line"], args["end_line"], args["replacement_text"] = start, end, text
			return args, ""
		}
		words, err := shellWords(rest)
		if err != "" {
			return nil, err
		}
		if len(words) < 2 || len(words) > 3 {
			return nil, "edit takes START:END and the text, or <search> <replace> [replace-all]"
		}
		args["search"], args["replace"] = words[0], words[1]
		if len(words) == 3 {
			args["replace-all"] = words[2] == "True" || words[2] == "true"
		}
		return args, ""
	}
	words, err := shellWords(rest)
	if err != "" {
		return nil, err
	}
	required := 0
	for _, a := range cmd.args {
		if !strings.HasSuffix(a, "?") {
			required++
		}
	}
	if len(words) < required || len(words) > len(cmd.args) {
		return nil, fmt.Sprintf("takes %d to %d arguments, got %d", required, len(cmd.args), len(words))
	}
	for i, w := range words {
		key := strings.TrimSuffix(cmd.args[i], "?")
		args[key] = w
		for _, n := range cmd.ints {
			if n == key {
				v, err := strconv.Atoi(w)
				if err != nil {
					return nil, fmt.Sprintf("%s must be a line number, got %q", key, w)
				}
				args[key] = v
			}
		}
	}
	return args, ""
}

func isDigits(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// shellWords splits s as a POSIX shell splits words: whitespace between,
// single quotes literal, double quotes with backslash escapes of \ " $ `,
// backslash outside quotes escaping the next character.
func shellWords(s string) ([]string, string) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "an unclosed ' quote"
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, "an unclosed \" quote"
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, ""
}

// sweAgentPrompt renders SWE-agent's command documentation and response
// format (its default system template): SWE-agent's own commands, then the
// listed tools as NAME {json} commands, the forms the parser reads.
func sweAgentPrompt(fns []function) string {
	var b strings.Builder
	b.WriteString("COMMANDS:\n")
	for _, name := range []string{"open", "goto", "scroll_up", "scroll_down", "create", "find_file", "search_dir", "search_file", "edit", "insert", "submit"} {
		c := sweCommands[name]
		fmt.Fprintf(&b, "%s:\n  docstring: %s\n  signature: %s\n\n", name, c.doc, c.signature)
	}
	for _, fn := range fns {
		fmt.Fprintf(&b, "%s:\n  docstring: %s\n  signature: %s <json arguments>\n  arguments (JSON Schema): %s\n\n", fn.Name, oneLine(fn.Description), fn.Name, compactJSON(fn.Parameters))
	}
	b.WriteString("Any other command line runs in bash (interactive commands are not supported).\n\n")
	b.WriteString("RESPONSE FORMAT:\nYour output should always include _one_ discussion and _one_ command field EXACTLY as in the following example:\n")
	b.WriteString("DISCUSSION\nFirst I'll start by using ls to see what files are in the current directory. Then maybe we can look at some relevant files to see what they look like.\n```\nls -a\n```\n\n")
	b.WriteString("You should only include a *SINGLE* command in the command section and then wait for a response from the shell before continuing with more discussion and commands.")
	return b.String()
}
