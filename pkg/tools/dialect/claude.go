package dialect

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/toold/toold/pkg/tools"
)

// ClaudeCodeVersion is the Claude Code release whose tool input schemas
// the claude-code dialect follows: those @anthropic-ai/claude-code 2.1.332
// sends the Messages API (captured from the pinned host by
// pkg/mcpserver/mcphosts TestHostDialects), and, for the tools a headless
// run does not offer, sdk-tools.d.ts of the same package.
const ClaudeCodeVersion = "@anthropic-ai/claude-code 2.1.332 (the tools `claude -p` sends its model, and sdk-tools.d.ts; checked against the release in testdata/hosts)"

// ClaudeCode is Claude Code's tool set: Bash, Read, Write, Edit, Glob,
// Grep, TodoWrite, WebFetch, WebSearch, TaskOutput, TaskStop,
// AskUserQuestion, and the tools toold has no counterpart for (Agent,
// NotebookEdit, plan mode, MCP resources), listed as such.
func ClaudeCode() tools.Dialect {
	filePath := func(what string) string {
		return `"file_path":{"type":"string","description":"The absolute path to the file ` + what + `"}`
	}
	return tools.Dialect{
		Name: "claude-code", Agent: "Claude Code", Version: ClaudeCodeVersion,
		Tools: []tools.DialectTool{
			{
				Name:        "Bash",
				Description: "Executes a bash command with an optional timeout (in milliseconds, up to 600000). Use run_in_background for long-running processes and read their output with TaskOutput.",
				Schema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"The command to execute"},
"timeout":{"type":"number","description":"Optional timeout in milliseconds (max 600000 for a foreground command)"},
"description":{"type":"string","description":"Clear, concise description of what this command does in 5-10 words, in active voice"},
"run_in_background":{"type":"boolean","description":"Set to true to run this command in the background."},
"dangerouslyDisableSandbox":{"type":"boolean","description":"Set this to true to dangerously override sandbox mode and run commands without sandboxing."}},
"required":["command"],"additionalProperties":false}`),
				Target: "run_command",
				Map: steps(
					msToSeconds("timeout", "timeout"),
					drop("description", "Claude Code's description of the command, for the person; toold shows the command itself"),
					rename("run_in_background", "is_background"),
					rename("dangerouslyDisableSandbox", "outside_sandbox"), // only asks: a person approves that one call outside the sandbox
				),
				Shape: claudeBashShape,
			},
			{
				Name: "TaskOutput", Earlier: true,
				Aliases:     []string{"BashOutput"},
				Description: "Retrieves output from a running or completed background task (a shell started with run_in_background). block waits for more output, up to timeout milliseconds.",
				Schema: schema(`{"type":"object","properties":{
"task_id":{"type":"string","description":"The task ID to get output from"},
"block":{"type":"boolean","description":"Whether to wait for completion"},
"timeout":{"type":"number","description":"Max wait time in ms"}},
"required":["task_id","block","timeout"],"additionalProperties":false}`),
				Legacy: []string{"bash_id", "filter"},
				Target: "get_output",
				Map: steps(
					rename("task_id", "process_id"), rename("bash_id", "process_id"),
					blockWait,
					dropIf("filter", []any{""}, `toold returns the whole new output: filter it with Bash (e.g. "grep PATTERN") on a file the command writes, or read it all`),
				),
			},
			{
				Name:        "TaskStop",
				Aliases:     []string{"KillShell", "KillBash"},
				Description: "Stops a running background task by its ID.",
				Schema: schema(`{"type":"object","properties":{
"task_id":{"type":"string","description":"The ID of the background task to stop"},
"shell_id":{"type":"string","description":"Deprecated: use task_id instead"}},"additionalProperties":false}`),
				Target: "kill",
				Map:    steps(rename("task_id", "process_id"), rename("shell_id", "process_id")),
			},
			{
				Name:        "Read",
				Description: "Reads a file from the local filesystem. Results are returned using cat -n format, with line numbers starting at 1 (number, then \"→\", then the line). offset and limit read part of a large file.",
				Schema: schema(`{"type":"object","properties":{` + filePath("to read") + `,
"offset":{"type":"integer","minimum":0,"description":"The line number to start reading from. Only provide if the file is too large to read at once"},
"limit":{"type":"integer","exclusiveMinimum":0,"description":"The number of lines to read. Only provide if the file is too large to read at once."},
"allow_large":{"type":"boolean","description":"Read a file larger than the usual limit in one call."},
"pages":{"type":"string","description":"Page range for PDF files (e.g., \"1-5\", \"3\", \"10-20\"). Only applicable to PDF files. Maximum 20 pages per request."}},
"required":["file_path"],"additionalProperties":false}`),
				Target: "read_file",
				Map: steps(rename("file_path", "path"), zeroOffset,
					drop("allow_large", "toold reads up to its own limits and says how to read on (offset and limit)"),
					dropIf("pages", []any{""}, "toold reads text files only: it cannot render PDF pages (run a converter such as pdftotext with Bash)")),
				Shape: catN,
			},
			{
				Name:        "Write",
				Description: "Writes a file to the local filesystem, overwriting an existing file.",
				Schema: schema(`{"type":"object","properties":{` + filePath("to write (must be absolute, not relative)") + `,
"content":{"type":"string","description":"The content to write to the file"}},
"required":["file_path","content"],"additionalProperties":false}`),
				Target: "write_file",
				Map:    steps(rename("file_path", "path")),
			},
			{
				Name:        "Edit",
				Description: "Performs exact string replacements in files: old_string must be unique in the file unless replace_all is true.",
				Schema: schema(`{"type":"object","properties":{` + filePath("to modify") + `,
"old_string":{"type":"string","description":"The text to replace"},
"new_string":{"type":"string","description":"The text to replace it with (must be different from old_string)"},
"replace_all":{"type":"boolean","default":false,"description":"Replace all occurrences of old_string (default false)"}},
"required":["file_path","old_string","new_string"],"additionalProperties":false}`),
				Target: "edit_file",
				Map:    steps(rename("file_path", "path")),
			},
			{
				Name:        "Glob",
				Description: "Fast file pattern matching: returns the paths of files matching a glob pattern such as \"**/*.js\".",
				Schema: schema(`{"type":"object","properties":{
"pattern":{"type":"string","description":"The glob pattern to match files against"},
"path":{"type":"string","description":"The directory to search in. If not specified, the current working directory will be used."}},
"required":["pattern"],"additionalProperties":false}`),
				Target: "glob",
			},
			{
				Name:        "Grep",
				Description: "A search tool built on ripgrep: regular expression search of file contents, with output modes content, files_with_matches (default) and count.",
				Schema: schema(`{"type":"object","properties":{
"pattern":{"type":"string","description":"The regular expression pattern to search for in file contents"},
"path":{"type":"string","description":"File or directory to search in (rg PATH). Defaults to current working directory."},
"glob":{"type":"string","description":"Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob"},
"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"description":"\"content\" shows matching lines, \"files_with_matches\" shows file paths, \"count\" shows match counts. Defaults to \"files_with_matches\"."},
"-B":{"type":"number","description":"Number of lines to show before each match (rg -B). Requires output_mode: \"content\", ignored otherwise."},
"-A":{"type":"number","description":"Number of lines to show after each match (rg -A). Requires output_mode: \"content\", ignored otherwise."},
"-C":{"type":"number","description":"Alias for context."},
"context":{"type":"number","description":"Number of lines to show before and after each match (rg -C). Requires output_mode: \"content\", ignored otherwise."},
"-n":{"type":"boolean","description":"Show line numbers in output (rg -n). Requires output_mode: \"content\", ignored otherwise. Defaults to true."},
"-o":{"type":"boolean","description":"Print only the matched parts of each matching line, one match per output line (rg -o). Requires output_mode: \"content\"; default false."},
"-i":{"type":"boolean","description":"Case insensitive search (rg -i)"},
"type":{"type":"string","description":"File type to search (rg --type). Common types: js, py, rust, go, java, etc."},
"head_limit":{"type":"number","description":"Limit output to first N lines/entries, equivalent to \"| head -N\". Defaults to 250; 0 for unlimited."},
"offset":{"type":"number","description":"Skip first N lines/entries before applying head_limit. Defaults to 0."},
"multiline":{"type":"boolean","description":"Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false."}},
"required":["pattern"],"additionalProperties":false}`),
				Target: "grep_search",
				Map:    claudeGrepMap,
				Shape:  claudeGrepShape,
			},
			{
				Name:        "TodoWrite",
				Description: "Creates and updates the structured task list for the current session; send the whole list each time.",
				Schema: schema(`{"type":"object","properties":{"todos":{"type":"array","description":"The updated todo list","items":{"type":"object","properties":{
"content":{"type":"string","minLength":1},
"status":{"type":"string","enum":["pending","in_progress","completed"]},
"activeForm":{"type":"string","minLength":1}},"required":["content","status","activeForm"]}}},
"required":["todos"],"additionalProperties":false}`),
				Target: "manage_todos",
				Map:    todoMap("content", "status", map[string]string{"pending": "pending", "in_progress": "in_progress", "completed": "completed"}, "activeForm"),
			},
			{
				Name:        "WebFetch",
				Description: "Fetches content from a URL. (Claude Code then runs prompt on it with a small model; toold returns the page as Markdown for you to read.)",
				Schema: schema(`{"type":"object","properties":{
"url":{"type":"string","format":"uri","description":"The URL to fetch content from"},
"prompt":{"type":"string","description":"The prompt to run on the fetched content"},
"offset":{"type":"integer","minimum":0,"description":"Character position in the page text to start reading from, the value the previous result gave."}},
"required":["url","prompt"],"additionalProperties":false}`),
				Target: "web_fetch",
				Map: steps(drop("prompt", "toold returns the page itself (as Markdown); apply the prompt to it yourself"),
					dropIf("offset", []any{0}, "toold returns a page from its start, up to its limit: fetch a more specific URL (a section's anchor, a raw file) to read further")),
			},
			{
				Name:        "WebSearch",
				Description: "Searches the web and returns results (title, URL, snippet).",
				Schema: schema(`{"type":"object","properties":{
"query":{"type":"string","minLength":2,"description":"The search query to use"},
"allowed_domains":{"type":"array","items":{"type":"string"},"description":"Only include search results from these domains"},
"blocked_domains":{"type":"array","items":{"type":"string"},"description":"Never include search results from these domains"}},
"required":["query"],"additionalProperties":false}`),
				Target: "web_search",
				Map:    claudeSearchMap,
			},
			{
				Name:        "AskUserQuestion",
				Description: "Asks the user a question with options to choose from.",
				Schema: schema(`{"type":"object","properties":{"questions":{"type":"array","minItems":1,"maxItems":4,"description":"Questions to ask the user (1-4 questions)","items":{"type":"object","properties":{
"question":{"type":"string"},"header":{"type":"string"},"multiSelect":{"type":"boolean"},
"options":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"description":{"type":"string"}},"required":["label"]}}},"required":["question"]}},
"answers":{"type":"object","description":"User answers collected by the permission component"},
"annotations":{"type":"object","description":"Optional per-question annotations from the user (e.g., notes on preview selections). Keyed by question text."},
"metadata":{"type":"object","description":"Optional metadata for tracking and analytics purposes. Not displayed to user."}},
"required":["questions"],"additionalProperties":false}`),
				Target: "user_collaboration",
				Map: steps(drop("answers", "filled in by Claude Code's permission component, not the model; removed"),
					drop("annotations", "filled in by Claude Code's permission component, not the model; removed"),
					drop("metadata", "analytics metadata; removed"), askMap),
			},
			{
				Name: "Agent", Aliases: []string{"Task"},
				Description: "Launches a sub-agent to handle a task autonomously.",
				Schema:      schema(`{"type":"object","properties":{"description":{"type":"string"},"prompt":{"type":"string"},"subagent_type":{"type":"string"}},"required":["description","prompt"]}`),
				Missing:     subAgents,
			},
			{
				Name:        "NotebookEdit",
				Description: "Replaces, inserts or deletes a cell of a Jupyter notebook.",
				Schema:      schema(`{"type":"object","properties":{"notebook_path":{"type":"string"},"cell_id":{"type":"string"},"new_source":{"type":"string"},"cell_type":{"type":"string","enum":["code","markdown"]},"edit_mode":{"type":"string","enum":["replace","insert","delete"]}},"required":["notebook_path","new_source"]}`),
				Missing:     "toold has no notebook editor: a notebook is JSON; change it with Edit (old_string/new_string in the .ipynb) or Write",
			},
			{
				Name: "ExitPlanMode", Aliases: []string{"EnterPlanMode"},
				Description: "Leaves plan mode once the plan is ready for the user's approval.",
				Schema:      schema(`{"type":"object","properties":{}}`),
				Missing:     "toold has no plan mode: present the plan to the user in your reply (TodoWrite keeps the steps)",
			},
			{
				Name: "Monitor", Description: "Runs a command and reports each line it prints as an event.",
				Schema:  schema(`{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},"timeout_ms":{"type":"number"}},"required":["command","description"]}`),
				Missing: "toold has no event monitor: start the command with Bash (run_in_background) and read what it printed with Read of a file it writes, or run it in the foreground",
			},
			missing("CronCreate", "Schedules a prompt to run at cron times.", `{"cron":{"type":"string"},"prompt":{"type":"string"}},"required":["cron","prompt"]`, noSchedule),
			missing("CronDelete", "Deletes a scheduled prompt.", `{"id":{"type":"string"}},"required":["id"]`, noSchedule),
			missing("CronList", "Lists the scheduled prompts.", `}`, noSchedule),
			missing("ScheduleWakeup", "Wakes the session up later with a prompt.", `{"delaySeconds":{"type":"number"},"prompt":{"type":"string"}}`, noSchedule),
			missing("EnterWorktree", "Moves the session into a git worktree.", `{"name":{"type":"string"},"path":{"type":"string"}}`, noWorktree),
			missing("ExitWorktree", "Leaves the session's git worktree.", `{"action":{"type":"string","enum":["keep","remove"]}},"required":["action"]`, noWorktree),
			missing("SendMessage", "Messages another agent of the team.", `{"to":{"type":"string"},"message":{"type":"string"}},"required":["to","message"]`, subAgents),
			missing("ListAgents", "Lists the agents of the team.", `}`, subAgents),
			missing("Skill", "Runs a Claude Code skill.", `{"skill":{"type":"string"},"args":{"type":"string"}},"required":["skill"]`, noSkills),
			missing("Workflow", "Runs a predefined workflow script.", `{"name":{"type":"string"}}`, noSkills),
			{
				Name:        "ReportFindings",
				Description: "Reports a code review's verified findings.",
				Schema:      schema(`{"type":"object","properties":{"findings":{"type":"array"},"level":{"type":"string"}},"required":["findings"]}`),
				Missing:     "toold has no review report: give the findings in your reply",
			},
			{
				Name: "ListMcpResourcesTool", Aliases: []string{"ReadMcpResourceTool"},
				Description: "Lists (or reads) the resources of the configured MCP servers.",
				Schema:      schema(`{"type":"object","properties":{"server":{"type":"string"},"uri":{"type":"string"}}}`),
				Missing:     mcpResources,
			},
		},
	}
}

// missing is a tool toold has no counterpart for: its name, a short
// description, its schema's properties (and required), and what toold
// offers instead.
func missing(name, desc, props, instead string) tools.DialectTool {
	if props == "}" {
		props = "{}"
	}
	return tools.DialectTool{Name: name, Description: desc, Schema: schema(`{"type":"object","properties":` + props + `}`), Missing: instead}
}

// Answers for tool families toold does not have.
const (
	noSchedule   = "toold schedules nothing: it runs the calls you make now; do the work in this turn"
	noWorktree   = "toold works in its one workspace: make a worktree with Bash (git worktree add) and work on its files by path"
	noSkills     = "toold has no skills or workflows: do the steps yourself with the tools listed"
	subAgents    = "toold runs no sub-agents: do the task yourself with the tools listed (read, search, edit, run commands), step by step; TodoWrite/manage_todos keeps the plan"
	mcpResources = "toold exposes MCP servers' tools (listed as SERVER__TOOL), not their resources: call the server's tools, or read the file or URL directly"
	browserTools = "toold has no browser: fetch a page's content with web_fetch (url), search with web_search; it cannot click, fill forms or take screenshots"
)

// blockWait turns TaskOutput's block/timeout (ms) into get_output's wait_ms.
func blockWait(args map[string]any) ([]tools.Coercion, error) {
	var cs []tools.Coercion
	block, hasBlock := args["block"]
	to, hasTo := args["timeout"]
	delete(args, "block")
	delete(args, "timeout")
	b, _ := boolOf(block)
	if hasBlock && !b {
		cs = append(cs, tools.Coercion{Field: "/block", From: js(block), Rule: "not blocking: toold returns the output there is now"})
	}
	if b {
		ms := 30000.0
		if hasTo {
			if n, ok := number(to); ok && n > 0 {
				ms = n
			}
		}
		ms = min(ms, 600000)
		args["wait_ms"] = int(ms)
		cs = append(cs, tools.Coercion{Field: "/block", From: js(block), To: js(int(ms)), Rule: "block (with timeout in milliseconds) is toold's wait_ms: output is waited for up to then"})
	} else if hasTo {
		cs = append(cs, tools.Coercion{Field: "/timeout", From: js(to), Rule: "a timeout without block has no effect; removed"})
	}
	return cs, nil
}

// zeroOffset: Claude's Read offset 0 means the start; toold's first line is 1.
func zeroOffset(args map[string]any) ([]tools.Coercion, error) {
	if v, ok := args["offset"]; ok {
		if n, ok := number(v); ok && n == 0 {
			args["offset"] = 1
			return []tools.Coercion{{Field: "/offset", From: js(v), To: "1", Rule: "offset 0 is the first line, toold's 1"}}, nil
		}
	}
	return nil, nil
}

// rgTypes are ripgrep's --type names models use, as toold include globs.
var rgTypes = map[string]string{
	"go": "*.go", "py": "*.{py,pyi}", "python": "*.{py,pyi}", "js": "*.{js,jsx,mjs,cjs}", "ts": "*.{ts,tsx,cts,mts}",
	"typescript": "*.{ts,tsx,cts,mts}", "rust": "*.rs", "java": "*.java", "c": "*.{c,h}", "cpp": "*.{cc,cpp,cxx,hpp,hh,hxx,h}",
	"rb": "*.rb", "ruby": "*.rb", "php": "*.php", "cs": "*.cs", "kotlin": "*.{kt,kts}", "swift": "*.swift", "md": "*.{md,markdown}",
	"markdown": "*.{md,markdown}", "json": "*.json", "yaml": "*.{yaml,yml}", "toml": "*.toml", "sh": "*.{sh,bash,zsh}", "html": "*.{html,htm}",
	"css": "*.{css,scss,sass,less}", "sql": "*.sql", "proto": "*.proto", "scala": "*.scala", "lua": "*.lua", "vue": "*.vue",
}

// claudeGrepMap maps Grep's ripgrep options onto grep_search. The output
// mode is kept for the shape (files_with_matches, count).
func claudeGrepMap(args map[string]any) ([]tools.Coercion, error) {
	var cs []tools.Coercion
	add := func(more []tools.Coercion, err error) error {
		cs = append(cs, more...)
		return err
	}
	if err := add(rename("glob", "include")(args)); err != nil {
		return cs, err
	}
	if t, ok := args["type"]; ok {
		ts, _ := t.(string)
		g, known := rgTypes[strings.ToLower(ts)]
		if !known {
			return cs, invalid("type", "toold does not know the file type %s: give a glob instead, e.g. \"glob\": \"*.%s\"", js(t), ts)
		}
		if _, has := args["include"]; has {
			return cs, invalid("type", "give \"glob\" or \"type\", not both")
		}
		delete(args, "type")
		args["include"] = g
		cs = append(cs, tools.Coercion{Field: "/type", From: js(t), To: js(g), Rule: "ripgrep file type as toold's include glob"})
	}
	if err := add(rename("-i", "ignore_case")(args)); err != nil {
		return cs, err
	}
	// Context: -C, context, or the larger of -A and -B.
	ctx := -1.0
	var from []string
	for _, k := range []string{"-C", "context", "-A", "-B"} {
		if v, ok := args[k]; ok {
			n, isNum := number(v)
			if !isNum || n < 0 {
				return cs, invalid(k, "%q is a number of lines, got %s", k, js(v))
			}
			delete(args, k)
			from = append(from, k)
			ctx = max(ctx, n)
		}
	}
	if ctx >= 0 {
		ctx = min(ctx, 10)
		args["context_lines"] = int(ctx)
		rule := "lines of context are toold's context_lines (at most 10)"
		if len(from) > 1 || from[0] == "-A" || from[0] == "-B" {
			rule = "lines before/after are toold's context_lines, the larger of them on both sides (at most 10)"
		}
		cs = append(cs, tools.Coercion{Field: "/" + from[0], To: js(int(ctx)), Rule: rule})
	}
	if err := add(drop("-n", "toold always shows line numbers")(args)); err != nil {
		return cs, err
	}
	if err := add(dropIf("-o", []any{false}, "toold shows whole matching lines; drop -o")(args)); err != nil {
		return cs, err
	}
	if err := add(dropIf("multiline", []any{false}, "toold matches one line at a time: search for a part on one line, or use Bash with rg -U")(args)); err != nil {
		return cs, err
	}
	if err := add(dropIf("offset", []any{0}, "toold cannot skip the first matches: narrow the pattern or path instead")(args)); err != nil {
		return cs, err
	}
	if v, ok := args["head_limit"]; ok {
		n, isNum := number(v)
		delete(args, "head_limit")
		switch {
		case !isNum || n < 0:
			return cs, invalid("head_limit", "\"head_limit\" is a number, got %s", js(v))
		case n == 0:
			args["max_results"] = 2000
		default:
			args["max_results"] = int(min(n, 2000))
		}
		cs = append(cs, tools.Coercion{Field: "/head_limit", From: js(v), To: js(args["max_results"]), Rule: "head_limit is toold's max_results (0, unlimited, is toold's most: 2000)"})
	}
	if v, ok := args["output_mode"]; ok {
		delete(args, "output_mode")
		if s, _ := v.(string); s != "content" {
			cs = append(cs, tools.Coercion{Field: "/output_mode", From: js(v), Rule: "toold returns the matching lines (path:line:text); the paths are their first field"})
		}
	}
	return cs, nil
}

// claudeGrepShape gives Grep's output modes: files_with_matches (the
// default) lists the files, count the matches per file, content the lines.
func claudeGrepShape(orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	mode, _ := orig["output_mode"].(string)
	if mode == "content" {
		return res, nil
	}
	counts := map[string]int{}
	var order []string
	for _, line := range strings.Split(res.Text, "\n") {
		m := grepLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, seen := counts[m[1]]; !seen {
			order = append(order, m[1])
		}
		counts[m[1]]++
	}
	if len(order) == 0 {
		return withText(res, "No files found"), nil
	}
	var b strings.Builder
	if mode == "count" {
		total := 0
		for _, p := range order {
			fmt.Fprintf(&b, "%s:%d\n", p, counts[p])
			total += counts[p]
		}
		fmt.Fprintf(&b, "\nFound %d total occurrences across %d files.", total, len(order))
		return withText(res, b.String()), nil
	}
	sort.Strings(order)
	fmt.Fprintf(&b, "Found %d files\n%s", len(order), strings.Join(order, "\n"))
	return withText(res, b.String()), nil
}

// grepLine is one match line of grep_search: path:line:text.
var grepLine = regexp.MustCompile(`^(.+?):(\d+):`)

// claudeBashShape gives Bash's result: the command's output, and for a
// failing command "Exit code N" first.
func claudeBashShape(_ map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	out, exit, _, _, ok := commandOutput(res)
	if err != nil || !ok {
		return res, err
	}
	out = strings.TrimRight(out, "\n")
	if exit != 0 {
		out = strings.TrimRight(fmt.Sprintf("Exit code %d\n%s", exit, out), "\n")
	} else if out == "" {
		out = "(Bash completed with no output)"
	}
	return withText(res, out), nil
}

// catN gives Read's result as Claude Code 2.1.332 numbers lines: the
// line number, a tab, the line ("1\talpha"), lines joined by newlines
// with none after the last; a read to the end of a file that ends with a
// newline has its empty last line numbered too, as Claude Code counts
// lines. A
// range the model asked for (offset, limit) comes without toold's note on
// how to read on, as Claude Code's does; toold's notes stay when toold
// cut the file itself. An empty file and an offset past the end answer
// with Claude Code's warnings.
func catN(orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil {
		if m := pastEnd.FindStringSubmatch(err.Error()); m != nil {
			return &tools.Result{Text: fmt.Sprintf("<system-reminder>Warning: the file exists but is shorter than the provided offset (%s). The file has %s lines.</system-reminder>", m[1], m[2])}, nil
		}
		return res, err
	}
	if res == nil {
		return res, err
	}
	if size, _ := number(toNumber(res.Structured["size"])); size == 0 && res.Structured["size"] != nil {
		return withText(res, "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"), nil
	}
	var lines, notes []string
	last := 0
	for _, l := range strings.Split(strings.TrimRight(res.Text, "\n"), "\n") {
		if m := numberedLine.FindStringSubmatch(l); m != nil && len(notes) == 0 {
			lines = append(lines, m[1]+"\t"+m[2])
			last, _ = strconv.Atoi(m[1])
			continue
		}
		notes = append(notes, l)
	}
	if len(lines) == 0 {
		return res, nil
	}
	_, ranged := orig["limit"]
	if _, ok := orig["offset"]; ok {
		ranged = true
	}
	total, known := number(toNumber(res.Structured["total_lines"]))
	if nl, _ := res.Structured["final_newline"].(bool); known && nl && int(total) == last {
		lines = append(lines, fmt.Sprintf("%d\t", last+1)) // the file ends with a newline: Claude Code's empty last line
	}
	text := strings.Join(lines, "\n")
	if !ranged {
		if n := strings.TrimSpace(strings.Join(notes, "\n")); n != "" {
			text += "\n\n" + n
		}
	}
	return withText(res, text), nil
}

// pastEnd is read_file's error for an offset past the end: the offset and
// the file's lines.
var pastEnd = regexp.MustCompile(`offset (\d+) is past the end of .*, which has (\d+) lines?`)

// claudeSearchMap maps WebSearch's domain lists onto web_search's site.
func claudeSearchMap(args map[string]any) ([]tools.Coercion, error) {
	var cs []tools.Coercion
	if v, ok := args["allowed_domains"]; ok {
		list, _ := v.([]any)
		delete(args, "allowed_domains")
		switch len(list) {
		case 0:
		case 1:
			args["site"] = list[0]
			cs = append(cs, tools.Coercion{Field: "/allowed_domains", From: js(v), To: js(list[0]), Rule: "one allowed domain is toold's site"})
		default:
			return cs, invalid("allowed_domains", "toold searches one site at a time: call WebSearch once per domain")
		}
	}
	if v, ok := args["blocked_domains"]; ok {
		delete(args, "blocked_domains")
		if list, _ := v.([]any); len(list) > 0 {
			cs = append(cs, tools.Coercion{Field: "/blocked_domains", From: js(v), Rule: "toold cannot exclude domains; results from them may appear"})
		}
	}
	return cs, nil
}

// askMap maps AskUserQuestion (one question) onto user_collaboration.
func askMap(args map[string]any) ([]tools.Coercion, error) {
	qs, _ := args["questions"].([]any)
	if len(qs) != 1 {
		return nil, invalid("questions", "toold asks one question a call: send one question, then the next")
	}
	q, _ := qs[0].(map[string]any)
	text, _ := q["question"].(string)
	if text == "" {
		return nil, invalid("questions", "the question needs its \"question\" text")
	}
	delete(args, "questions")
	args["prompt"] = text
	var choices []any
	opts, _ := q["options"].([]any)
	for _, o := range opts {
		if m, ok := o.(map[string]any); ok {
			if l, _ := m["label"].(string); l != "" {
				choices = append(choices, l)
			}
		}
	}
	if len(choices) > 0 {
		args["choices"] = choices
	}
	return []tools.Coercion{{Field: "/questions", From: tools.Clip(js(qs), 80), To: js(text), Rule: "the question (and its option labels) are toold's prompt and choices"}}, nil
}

// todoMap maps a todo list ({todos: [{text, status, ...}]}) onto
// manage_todos' write: text field titleKey is the title, statuses mapped,
// drop fields removed.
func todoMap(titleKey, statusKey string, statuses map[string]string, drops ...string) func(map[string]any) ([]tools.Coercion, error) {
	return func(args map[string]any) ([]tools.Coercion, error) {
		list, ok := args["todos"].([]any)
		if !ok {
			return nil, invalid("todos", "\"todos\" is the whole list, an array of objects")
		}
		out := make([]any, 0, len(list))
		for i, it := range list {
			m, _ := it.(map[string]any)
			if m == nil {
				return nil, invalid(fmt.Sprintf("todos/%d", i), "each todo is an object with %q and %q", titleKey, statusKey)
			}
			t := map[string]any{}
			title, _ := m[titleKey].(string)
			if title == "" {
				return nil, invalid(fmt.Sprintf("todos/%d/%s", i, titleKey), "todo %d needs its %q text", i, titleKey)
			}
			t["title"] = title
			if s, ok := m[statusKey].(string); ok {
				st, known := statuses[s]
				if !known {
					return nil, invalid(fmt.Sprintf("todos/%d/%s", i, statusKey), "unknown status %q", s)
				}
				t["status"] = st
			}
			if id, ok := m["id"]; ok {
				t["id"] = fmt.Sprint(id)
			}
			out = append(out, t)
		}
		delete(args, "todos")
		args["action"] = "write"
		args["todos"] = out
		rule := fmt.Sprintf("the list is toold's manage_todos write: %s is the title", titleKey)
		if len(drops) > 0 {
			rule += "; " + strings.Join(drops, ", ") + " not kept"
		}
		return []tools.Coercion{{Field: "/todos", From: tools.Clip(js(list), 80), To: tools.Clip(js(out), 80), Rule: rule}}, nil
	}
}
