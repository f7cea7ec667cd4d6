package tools

import (
	"fmt"
	"strings"
	"unicode"
)

// NameField is the Coercion.Field of a repair made to the tool name rather
// than to an argument (it is not a JSON pointer, which always starts "/").
const NameField = "name"

// nameVariant is a spelling of a tool name a model wrote, rewritten one
// step closer to a registered name, and why.
type nameVariant struct {
	name, why string
}

// providerPrefixes are namespaces models put before a tool name: OpenAI's
// "functions." (and the harmony format's "to=functions."), Gemini's
// "default_api.", and generic ones seen from small models.
var providerPrefixes = []string{
	"to=functions.", "functions.", "function.", "functions/", "functions:", "default_api.", "default_api:",
	"tools.", "tool.", "tools/", "tools:", "api.", "mcp.", "toold.", "assistant.", "tool_code.",
}

// nameVariants returns the rewrites of name to try, in order, each
// cumulative: trimmed of quotes, whitespace and a trailing "()"; without a
// provider prefix; with "/", "::", ":" or "->" between tool and operation
// as "."; in snake case. The first variant that resolves wins.
func nameVariants(name string) []nameVariant {
	var out []nameVariant
	var whys []string
	cur := name
	add := func(n, why string) {
		if n == cur || n == "" {
			return
		}
		cur = n
		whys = append(whys, why)
		out = append(out, nameVariant{cur, strings.Join(whys, ", ")})
	}
	t := strings.TrimSpace(cur)
	t = strings.Trim(t, "`'\"")
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), ":"))
	if i := strings.IndexByte(t, '('); i > 0 && strings.HasSuffix(t, ")") && strings.TrimSpace(t[i+1:len(t)-1]) == "" {
		t = strings.TrimSpace(t[:i])
	}
	add(t, "quotes, whitespace and \"()\" removed")
	for changed := true; changed; {
		changed = false
		for _, p := range providerPrefixes {
			if len(cur) > len(p) && strings.EqualFold(cur[:len(p)], p) {
				add(cur[len(p):], fmt.Sprintf("provider prefix %q removed", p))
				changed = true
				break
			}
		}
	}
	for _, sep := range []string{"::", "->", "/", ":", "#"} {
		if strings.Count(cur, sep) == 1 {
			add(strings.Replace(cur, sep, ".", 1), fmt.Sprintf("%q read as \".\" between tool and operation", sep))
			break
		}
	}
	add(snakeCase(cur), "case and separators normalized")
	return out
}

// snakeCase lowercases s and writes camelCase humps, "-" and spaces as "_",
// keeping ".": "File-Operations.ReadFile" -> "file_operations.read_file".
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '-' || r == ' ' || r == '\t':
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		case unicode.IsUpper(r):
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) && !strings.HasSuffix(b.String(), "_") && !strings.HasSuffix(b.String(), ".") {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// verbMap maps the tool names of other agents (Claude Code, codex, Gemini
// CLI, Cline, OpenHands, SWE-agent) to the toold operation that does the
// same thing with the same kind of arguments. A verb maps only when that
// is unambiguous and the call still goes through toold's policy; verbs
// that could mean several things are in verbHints instead. Keys are in
// snake case (the form nameVariants ends with).
var verbMap = map[string]string{
	// Shell.
	"bash": "run_command", "shell": "run_command", "sh": "run_command", "execute_command": "run_command",
	"run_shell_command": "run_command", "run_terminal_cmd": "run_command", "execute_bash": "run_command",
	"run_terminal_command": "run_command", "terminal": "run_command", "exec_command": "run_command",
	"container.exec": "run_command", "local_shell": "run_command", "shell_command": "run_command",
	// Reading.
	"cat": "read_file", "view": "read_file", "read": "read_file", "open_file": "read_file", "view_file": "read_file",
	"read_text_file": "read_file", "get_file_contents": "read_file", "file_read": "read_file",
	// Listing.
	"ls": "list_dir", "list_directory": "list_dir", "list_background_processes": "list_processes", "list_files": "list_dir", "list_dir_contents": "list_dir",
	// Searching.
	"grep": "grep_search", "rg": "grep_search", "ripgrep": "grep_search", "search_file_content": "grep_search",
	"search_files": "grep_search", "code_search": "grep_search", "find_files": "glob", "file_search": "glob", "glob_search": "glob",
	// Writing and editing.
	"write": "write_file", "write_to_file": "write_file", "file_write": "write_file",
	"edit": "edit_file", "replace_in_file": "edit_file", "replace": "edit_file", "multi_edit": "edit_file",
	"str_replace_editor": "str_replace_based_edit_tool", "text_editor": "str_replace_based_edit_tool",
	"delete_file": "delete_path", "remove_file": "delete_path", "move_file": "move_path", "rename_file": "move_path",
	"mkdir": "make_dir", "create_directory": "make_dir",
	// Web.
	"web_fetch": "web_fetch", "webfetch": "web_fetch", "fetch_url": "web_fetch", "fetch": "web_fetch",
	"web_search": "web_search", "websearch": "web_search", "google_web_search": "web_search", "search_web": "web_search",
	// People, plans, memory.
	"ask_followup_question": "user_collaboration", "ask_human": "user_collaboration", "ask_user_question": "user_collaboration",
	"todo_write": "manage_todos", "todowrite": "manage_todos", "update_plan": "manage_todos",
	"save_memory": "store_memory",
}

// verbHints answer verbs with no single toold equivalent: what to call
// instead.
var verbHints = map[string]string{
	"search":             `"search" is ambiguous here: call grep_search to search file contents, glob to find files by name, or web_search for the web`,
	"find":               `call glob to find files by name pattern (or grep_search to search their contents)`,
	"git":                `call build_and_version_control with "operation" one of git_status, git_diff, git_log, git_show, git_branch, git_commit (or run_command for other git commands)`,
	"python":             `there is no Python tool: call run_command with "command": "python3 -c '...'" or write a script with write_file and run it`,
	"python_interpreter": `there is no Python tool: call run_command with "command": "python3 -c '...'"`,
	"code_interpreter":   `there is no code interpreter: call run_command with "command" set to the program to run`,
	"attempt_completion": `there is no completion tool: answer the user directly when the task is done`,
	"finish":             `there is no finish tool: answer the user directly when the task is done`,
	"rm":                 `call delete_path with "path" (it asks before deleting; "recursive": true for a directory)`,
	"mv":                 `call move_path with "source" and "destination"`,
	"find_file":          `call glob with "pattern": "**/NAME" to find files by name (SWE-agent's find_file {"file_name": ...} is mapped to it)`,
	"submit":             `there is no submit tool: the changes are in the workspace already; answer the user when the task is done`,
}

// Tool families toold does not have, and what it offers instead. A call to
// one gets this answer, never a fuzzy match to some other tool.
const (
	familySubAgents = "toold runs no sub-agents: do the task yourself with the tools listed (read, search, edit, run commands), step by step; manage_todos keeps the plan"
	familyBrowser   = "toold has no browser: read a page's content with web_fetch (\"url\"), search with web_search; it cannot click, fill forms, type into pages or take screenshots"
	familyMCPRes    = "toold exposes MCP servers' tools (listed as SERVER__TOOL), not their resources: call the server's tools, or read the file or URL directly (read_file, web_fetch)"
)

// familyNames are other agents' tool names of families toold lacks (keys
// in snake case, like verbMap's).
var familyNames = map[string]string{
	"task": familySubAgents, "agent": familySubAgents, "dispatch_agent": familySubAgents, "spawn_agent": familySubAgents,
	"sub_agent": familySubAgents, "subagent": familySubAgents, "delegate": familySubAgents, "delegate_task": familySubAgents,
	"launch_agent": familySubAgents, "call_agent": familySubAgents, "new_task": familySubAgents, "run_subagent": familySubAgents,
	"browser": familyBrowser, "browse": familyBrowser, "navigate": familyBrowser, "click": familyBrowser, "fill": familyBrowser,
	"fill_form": familyBrowser, "type_text": familyBrowser, "hover": familyBrowser, "screenshot": familyBrowser, "take_screenshot": familyBrowser,
	"select_option": familyBrowser, "press_key": familyBrowser, "go_back": familyBrowser, "open_url": familyBrowser, "goto_url": familyBrowser,
	"invoke_agent": familySubAgents, "complete_task": "there is no complete_task tool: toold runs no sub-agents; answer the user directly when the task is done",
	"navigate_page": familyBrowser, "new_page": familyBrowser, "list_pages": familyBrowser, "take_snapshot": familyBrowser,
	"wait_for": familyBrowser, "evaluate_script": familyBrowser, "close_page": familyBrowser, "select_page": familyBrowser,
	"list_mcp_resources": familyMCPRes, "read_mcp_resource": familyMCPRes, "list_resources": familyMCPRes, "read_resource": familyMCPRes,
	"list_mcp_resources_tool": familyMCPRes, "read_mcp_resource_tool": familyMCPRes, "access_mcp_resource": familyMCPRes,
}

// familyHint returns the answer for a name of a tool family toold lacks:
// one of familyNames, or a browser automation tool's prefix (browser_,
// playwright_, puppeteer_).
func familyHint(name string) (string, bool) {
	if h, ok := familyNames[name]; ok {
		return h, true
	}
	for _, p := range []string{"browser_", "playwright_", "puppeteer_", "chrome_"} {
		if strings.HasPrefix(name, p) {
			return familyBrowser, true
		}
	}
	if strings.HasPrefix(name, "mcp_") {
		return "no MCP server here offers that tool: toold lists the tools of its configured MCP servers as SERVER__TOOL (see the tool list; toolctl mcp shows the servers)", true
	}
	return "", false
}
