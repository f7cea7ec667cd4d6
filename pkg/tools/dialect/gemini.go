package dialect

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// GeminiCLIVersion is the gemini-cli release whose tool declarations the
// gemini-cli dialect follows: the functionDeclarations @google/gemini-cli
// 0.61.0 sends the Gemini API (captured from the pinned host by
// pkg/mcpserver/mcphosts TestHostDialects into upstream/gemini-cli.json;
// the interactive tools a headless run hides are kept from
// google-gemini/gemini-cli@00edcf0372af4280a31e57dc76f6830346eb945c).
// Parameters and tools of earlier releases (absolute_path, path,
// offset/limit, include, directory; save_memory) are still mapped.
const GeminiCLIVersion = "@google/gemini-cli 0.61.0 (the declarations it sends its model; checked against the release in testdata/hosts)"

// GeminiCLI is gemini-cli's tool set.
func GeminiCLI() tools.Dialect {
	return adopt(tools.Dialect{
		Name: "gemini-cli", Agent: "gemini-cli", Version: GeminiCLIVersion,
		Tools: []tools.DialectTool{
			{
				Name:        "list_directory",
				Description: "Lists the names of files and subdirectories directly within a specified directory path.",
				Schema: schema(`{"type":"object","properties":{
"dir_path":{"type":"string","description":"The path to the directory to list"},
"ignore":{"type":"array","items":{"type":"string"},"description":"List of glob patterns to ignore"}},"required":["dir_path"]}`),
				Legacy: []string{"path", "file_filtering_options"},
				Target: "list_dir",
				Map: steps(rename("dir_path", "path"),
					dropIf("ignore", []any{"[]"}, "toold lists every entry: drop ignore, or use glob with a pattern"),
					drop("file_filtering_options", "toold applies its own ignore rules")),
			},
			{
				Name:        "read_file",
				Description: "Reads and returns the content of a specified file; start_line and end_line read part of a large file.",
				Schema: schema(`{"type":"object","properties":{
"file_path":{"type":"string","description":"The path to the file to read."},
"start_line":{"type":"number","description":"Optional: The 1-based line number to start reading from."},
"end_line":{"type":"number","description":"Optional: The 1-based line number to end reading at (inclusive)."}},"required":["file_path"]}`),
				Legacy: []string{"absolute_path", "offset", "limit"},
				Target: "read_file",
				Map:    geminiReadMap,
				Shape:  stripLineNumbers,
			},
			{
				Name:        "read_many_files",
				Description: "Reads content from multiple files specified by paths or glob patterns, concatenated.",
				Schema: schema(`{"type":"object","properties":{
"include":{"type":"array","minItems":1,"items":{"type":"string","minLength":1},"description":"An array of glob patterns or paths."},
"exclude":{"type":"array","items":{"type":"string","minLength":1},"description":"Optional. Glob patterns for files/directories to exclude."},
"recursive":{"type":"boolean","description":"Optional. Whether to search recursively. Defaults to true."},
"useDefaultExcludes":{"type":"boolean","description":"Optional. Whether to apply default exclusion patterns. Defaults to true."}},"required":["include"]}`),
				Legacy: []string{"paths", "file_filtering_options"},
				Target: "read_many_files",
				Map: steps(rename("include", "paths"),
					dropIf("exclude", []any{"[]"}, "toold cannot exclude patterns: list the files or narrower patterns in include"),
					drop("recursive", "toold's ** patterns decide the depth"),
					drop("useDefaultExcludes", "toold applies its own excludes"),
					drop("file_filtering_options", "toold applies its own ignore rules")),
			},
			{
				Name:        "glob",
				Description: "Finds files matching glob patterns (e.g. src/**/*.ts).",
				Schema: schema(`{"type":"object","properties":{
"pattern":{"type":"string","description":"The glob pattern to match against (e.g., '**/*.py', 'docs/*.md')."},
"dir_path":{"type":"string","description":"Optional: The absolute path to the directory to search within."},
"case_sensitive":{"type":"boolean","description":"Optional: Whether the search should be case-sensitive. Defaults to false."},
"respect_git_ignore":{"type":"boolean","description":"Optional: Whether to respect .gitignore patterns. Defaults to true."},
"respect_gemini_ignore":{"type":"boolean","description":"Optional: Whether to respect .geminiignore patterns. Defaults to true."}},"required":["pattern"]}`),
				Legacy: []string{"path"},
				Target: "glob",
				Map: steps(rename("dir_path", "path"),
					drop("case_sensitive", "toold's glob matches case as written"),
					drop("respect_git_ignore", "toold applies its own ignore rules"),
					drop("respect_gemini_ignore", "toold applies its own ignore rules")),
			},
			{
				Name:        "grep_search",
				Aliases:     []string{"search_file_content"},
				Description: "Searches for a regular expression pattern within file contents. Max 100 matches.",
				Schema: schema(`{"type":"object","properties":{
"pattern":{"type":"string","description":"The regular expression (regex) pattern to search for within file contents."},
"dir_path":{"type":"string","description":"Optional: The absolute path to the directory to search within."},
"include_pattern":{"type":"string","description":"Optional: A glob pattern to filter which files are searched (e.g., '*.js', '*.{ts,tsx}')."},
"exclude_pattern":{"type":"string","description":"Optional: A regular expression pattern to exclude from the search results."},
"names_only":{"type":"boolean","description":"Optional: If true, only the file paths of the matches are returned."},
"max_matches_per_file":{"type":"integer","minimum":1,"description":"Optional: Maximum number of matches to return per file."},
"total_max_matches":{"type":"integer","minimum":1,"description":"Optional: Maximum number of total matches to return. Defaults to 100."}},"required":["pattern"]}`),
				Legacy: []string{"path", "include"},
				Target: "grep_search",
				Map: steps(rename("dir_path", "path"), rename("include_pattern", "include"),
					dropIf("exclude_pattern", []any{""}, "toold cannot exclude lines by a second pattern: narrow the pattern, or use run_shell_command with grep -v"),
					drop("names_only", "toold returns the matching lines; the file paths are their first field"),
					geminiGrepOptions,
					drop("max_matches_per_file", "toold limits the total matches only"),
					rename("total_max_matches", "max_results")),
			},
			{
				Name:        "replace",
				Description: "Replaces text within a file: old_string must match exactly once unless allow_multiple is true.",
				Schema: schema(`{"type":"object","properties":{
"file_path":{"type":"string","description":"The path to the file to modify."},
"instruction":{"type":"string","description":"A clear, semantic instruction for the code change."},
"old_string":{"type":"string","description":"The exact literal text to replace."},
"new_string":{"type":"string","description":"The exact literal text to replace old_string with."},
"allow_multiple":{"type":"boolean","description":"If true, replace all occurrences of old_string."}},"required":["file_path","old_string","new_string"]}`),
				Legacy: []string{"expected_replacements"},
				Target: "edit_file",
				Map: steps(rename("file_path", "path"),
					drop("instruction", "the instruction describes the change for people; toold applies old_string/new_string"),
					rename("allow_multiple", "replace_all"), expectedReplacements),
			},
			{
				Name:        "write_file",
				Description: "Writes content to a specified file in the local filesystem.",
				Schema: schema(`{"type":"object","properties":{
"file_path":{"type":"string","description":"The path to the file to write to."},
"content":{"type":"string","description":"The content to write to the file."}},"required":["file_path","content"]}`),
				Target: "write_file",
				Map:    steps(rename("file_path", "path")),
			},
			{
				Name:        "run_shell_command",
				Description: "Executes a shell command as bash -c <command>. Set is_background for long-running servers or watchers.",
				Schema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"Exact bash command to execute as bash -c <command>"},
"description":{"type":"string","description":"Brief description of the command for the user."},
"dir_path":{"type":"string","description":"(OPTIONAL) The path of the directory to run the command in. Must be within the workspace."},
"is_background":{"type":"boolean","description":"Set to true if this command should be run in the background."}},"required":["command"]}`),
				Legacy: []string{"directory"},
				Target: "run_command",
				Map: steps(drop("description", "gemini-cli's description of the command, for the person; toold shows the command itself"),
					drop("delay_ms", "toold returns a background command's process_id at once; read its output with read_background_output"),
					rename("dir_path", "working_dir"), rename("directory", "working_dir")),
				Shape: geminiShellShape,
			},
			{
				Name:        "web_fetch",
				Description: "Processes content from a URL embedded in a prompt (toold fetches the URL; you apply the instructions).",
				Schema: schema(`{"type":"object","properties":{
"prompt":{"type":"string","description":"A prompt that includes the URL to fetch (starting with http:// or https://) and instructions on how to process its content."}},"required":["prompt"]}`),
				Target: "web_fetch",
				Map:    promptURL,
			},
			{
				Name:        "google_web_search",
				Description: "Performs a web search and returns the results.",
				Schema:      schema(`{"type":"object","properties":{"query":{"type":"string","description":"The search query to find information on the web."}},"required":["query"]}`),
				Target:      "web_search",
			},
			{
				Name: "save_memory", Earlier: true,
				Description: "Saves a specific fact to long-term memory.",
				Schema:      schema(`{"type":"object","properties":{"fact":{"type":"string","description":"The specific fact or piece of information to remember."}},"required":["fact"],"additionalProperties":false}`),
				Target:      "store_memory",
				Map:         steps(rename("fact", "content")),
			},
			{
				Name:        "write_todos",
				Description: "Lists the subtasks of the current request and their status; send the whole list each time.",
				Schema: schema(`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{
"description":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]}},"required":["description","status"]}}},"required":["todos"]}`),
				Target: "manage_todos",
				Map:    todoMap("description", "status", map[string]string{"pending": "pending", "in_progress": "in_progress", "completed": "completed", "cancelled": "cancelled"}),
			},
			{
				Name:        "read_background_output",
				Description: "Reads new output of a command started with is_background.",
				Schema:      schema(`{"type":"object","properties":{"pid":{"type":"integer","description":"The process id of the background process."}},"required":["pid"]}`),
				Legacy:      []string{"process_id"},
				Target:      "get_output",
				Map: steps(pidString, rename("pid", "process_id"), msToWait("delay_ms"),
					drop("lines", "toold returns the output that is new since the last read"),
					drop("wait_for_previous", "toold runs a stream's calls as they come; order them by waiting for each result")),
			},
			{
				Name:        "list_background_processes",
				Description: "Lists the background processes started with is_background.",
				Schema:      schema(`{"type":"object","properties":{}}`),
				Legacy:      []string{"wait_for_previous"},
				Target:      "list_processes",
				Map:         steps(drop("wait_for_previous", "toold runs a stream's calls as they come; order them by waiting for each result")),
			},
			{
				Name:        "ask_user",
				Description: "Asks the user a question.",
				Schema:      schema(`{"type":"object","properties":{"questions":{"type":"array","minItems":1,"maxItems":4,"items":{"type":"object","properties":{"question":{"type":"string"},"header":{"type":"string"},"options":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"description":{"type":"string"}}}}},"required":["question"]}}},"required":["questions"]}`),
				Target:      "user_collaboration",
				Map:         askMap,
			},
			{
				Name: "update_topic", Description: "Starts a new topic of the conversation (gemini-cli's chapters).",
				Schema:  schema(`{"type":"object","properties":{"strategic_intent":{"type":"string"},"summary":{"type":"string"},"title":{"type":"string"}},"required":["strategic_intent"]}`),
				Missing: "toold keeps no topics: say what you are doing next in your reply",
			},
			{
				Name: "invoke_agent", Description: "Delegates a task to a gemini-cli subagent.",
				Schema:  schema(`{"type":"object","properties":{"agent_name":{"type":"string"},"prompt":{"type":"string"}},"required":["agent_name","prompt"]}`),
				Missing: subAgents,
			},
			{
				Name: "activate_skill", Description: "Activates a gemini-cli skill.",
				Schema:  schema(`{"type":"object","properties":{"name":{"type":"string"}}}`),
				Missing: "toold has no skills: use the tools listed",
			},
			{
				Name: "enter_plan_mode", Description: "Enters (or leaves) gemini-cli's plan mode.",
				Schema:  schema(`{"type":"object","properties":{"reason":{"type":"string"}}}`),
				Missing: "toold has no plan mode: present the plan to the user in your reply (write_todos keeps the steps)",
			},
			{
				Name: "exit_plan_mode", Description: "Leaves gemini-cli's plan mode.",
				Schema:  schema(`{"type":"object","properties":{"plan_path":{"type":"string"}}}`),
				Missing: "toold has no plan mode: present the plan to the user in your reply (write_todos keeps the steps)",
			},
			{
				Name: "get_internal_docs", Description: "Reads gemini-cli's own documentation.",
				Schema:  schema(`{"type":"object","properties":{"path":{"type":"string"}}}`),
				Missing: "toold has no gemini-cli documentation: use the tools listed",
			},
		},
	})
}

// geminiReadMap maps read_file's line range (and the older absolute_path,
// 0-based offset and limit) onto toold's read_file.
func geminiReadMap(args map[string]any) ([]tools.Coercion, error) {
	cs, err := steps(rename("file_path", "path"), rename("absolute_path", "path"))(args)
	if err != nil {
		return cs, err
	}
	if v, ok := args["offset"]; ok { // earlier gemini-cli: 0-based
		n, isNum := number(v)
		if !isNum || n < 0 {
			return cs, invalid("offset", "\"offset\" is a 0-based line number, got %s", js(v))
		}
		args["offset"] = int(n) + 1
		cs = append(cs, tools.Coercion{Field: "/offset", From: js(v), To: js(int(n) + 1), Rule: "gemini-cli's 0-based offset is toold's 1-based line"})
	}
	start, hasStart := args["start_line"]
	end, hasEnd := args["end_line"]
	delete(args, "start_line")
	delete(args, "end_line")
	s := 1.0
	if hasStart {
		n, ok := number(start)
		if !ok || n < 1 {
			return cs, invalid("start_line", "\"start_line\" is a 1-based line number, got %s", js(start))
		}
		s = n
		args["offset"] = int(n)
		cs = append(cs, tools.Coercion{Field: "/start_line", From: js(start), To: js(int(n)), Rule: "start_line is toold's offset"})
	}
	if hasEnd {
		n, ok := number(end)
		if !ok || n < s {
			return cs, invalid("end_line", "\"end_line\" is a 1-based line number not before start_line, got %s", js(end))
		}
		args["limit"] = int(n-s) + 1
		cs = append(cs, tools.Coercion{Field: "/end_line", From: js(end), To: js(int(n-s) + 1), Rule: "end_line (inclusive) is toold's limit, the number of lines from start_line"})
	}
	return cs, nil
}

// expectedReplacements maps the earlier replace's expected_replacements: 1
// is toold's default, more is replace_all.
func expectedReplacements(args map[string]any) ([]tools.Coercion, error) {
	v, ok := args["expected_replacements"]
	if !ok {
		return nil, nil
	}
	delete(args, "expected_replacements")
	n, isNum := number(v)
	switch {
	case !isNum || n < 1:
		return nil, invalid("expected_replacements", "\"expected_replacements\" is a count of at least 1, got %s", js(v))
	case n == 1:
		return []tools.Coercion{{Field: "/expected_replacements", From: js(v), Rule: "one replacement is toold's default"}}, nil
	}
	args["replace_all"] = true
	return []tools.Coercion{{Field: "/expected_replacements", From: js(v), To: "true", Rule: "several replacements: toold's replace_all replaces every occurrence (it does not check the count)"}}, nil
}

var urlRE = regexp.MustCompile(`https?://[^\s<>"'\x60)\]]+`)

// promptURL takes the URL out of web_fetch's prompt.
func promptURL(args map[string]any) ([]tools.Coercion, error) {
	p, _ := args["prompt"].(string)
	urls := urlRE.FindAllString(p, -1)
	for i, u := range urls {
		urls[i] = strings.TrimRight(u, ".,;:!?")
	}
	switch len(urls) {
	case 0:
		return nil, errdefs.Invalid("/prompt", "dialect", "the prompt names no URL: include the full URL, starting with http:// or https://")
	case 1:
	default:
		return nil, errdefs.Invalid("/prompt", "dialect", "toold fetches one URL a call: call web_fetch once for each of %s", strings.Join(urls, ", "))
	}
	delete(args, "prompt")
	args["url"] = urls[0]
	return []tools.Coercion{{Field: "/prompt", From: tools.Clip(js(p), 80), To: js(urls[0]), Rule: "the URL in the prompt is toold's url; apply the prompt's instructions to the page yourself"}}, nil
}

var numbered = regexp.MustCompile(`(?m)^ *\d+\t`)

// stripLineNumbers gives gemini-cli 0.61.0's read_file result: the file's
// text without line numbers; an empty file is empty text; a part of the
// file comes after gemini-cli's notice of what is shown and how to read
// on (toold's own notes then go).
func stripLineNumbers(_ map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	if size, _ := number(toNumber(res.Structured["size"])); size == 0 && res.Structured["size"] != nil {
		return withText(res, ""), nil
	}
	first, _ := number(toNumber(res.Structured["start_line"]))
	last, _ := number(toNumber(res.Structured["end_line"]))
	total, known := number(toNumber(res.Structured["total_lines"]))
	if !known || first <= 1 && last >= total {
		return withText(res, numbered.ReplaceAllString(res.Text, "")), nil
	}
	if nl, _ := res.Structured["final_newline"].(bool); nl {
		total++ // gemini-cli splits the text on newlines: a final one starts an empty last line
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(res.Text, "\n"), "\n") {
		if m := numberedLine.FindStringSubmatch(l); m != nil {
			lines = append(lines, m[2])
		} else {
			break
		}
	}
	return withText(res, fmt.Sprintf("\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines %d-%d of %d total lines.\n"+
		"Action: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. "+
		"For example, to read the next section of the file, use start_line: %d.\n\n--- FILE CONTENT (truncated) ---\n%s",
		int(first), int(last), int(total), int(last)+1, strings.Join(lines, "\n"))), nil
}

// geminiShellShape gives run_shell_command's result as gemini-cli 0.61.0
// does: inside <untrusted_context>, Output (or "(empty)"), then Exit Code
// and Signal only when there is one to report. (gemini-cli then names the
// process group it ran; a foreground command of toold's has ended, and
// toold's result names none.)
func geminiShellShape(orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	out, exit, signal, _, ok := commandOutput(res)
	if err != nil || !ok {
		return res, err
	}
	if bg, _ := orig["is_background"].(bool); bg {
		return res, nil
	}
	out = strings.TrimRight(out, "\n")
	if out == "" {
		out = "(empty)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<untrusted_context>\nOutput: %s", out)
	if exit != 0 {
		fmt.Fprintf(&b, "\nExit Code: %d", exit)
	}
	if signal != "" {
		fmt.Fprintf(&b, "\nSignal: %s", signal)
	}
	b.WriteString("\n</untrusted_context>")
	return withText(res, b.String()), nil
}

// pidString: toold's process ids are strings (the process_id run_command
// returned), never the OS pid a number suggests.
func pidString(args map[string]any) ([]tools.Coercion, error) {
	v, ok := args["pid"]
	if !ok {
		return nil, nil
	}
	if _, isStr := v.(string); isStr {
		return nil, nil
	}
	s := strings.TrimSpace(fmt.Sprint(v))
	args["pid"] = s
	return []tools.Coercion{{Field: "/pid", From: js(v), To: js(s), Rule: "toold's process ids are strings (the process_id run_shell_command returned)"}}, nil
}

// geminiGrepOptions maps grep_search's ripgrep options: before, after and
// context lines (toold's context_lines, the largest, on both sides), case
// (gemini-cli ignores case unless case_sensitive is true), fixed_strings
// (the pattern quoted as a literal) and no_ignore.
func geminiGrepOptions(args map[string]any) ([]tools.Coercion, error) {
	var cs []tools.Coercion
	ctx := -1.0
	var from []string
	for _, k := range []string{"context", "before", "after"} {
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
		args["context_lines"] = int(min(ctx, 10))
		cs = append(cs, tools.Coercion{Field: "/" + from[0], To: js(args["context_lines"]), Rule: "lines before/after are toold's context_lines, the largest on both sides (at most 10)"})
	}
	sensitive := false
	if v, ok := args["case_sensitive"]; ok {
		b, isBool := boolOf(v)
		if !isBool {
			return cs, invalid("case_sensitive", "\"case_sensitive\" is true or false, got %s", js(v))
		}
		sensitive = b
		delete(args, "case_sensitive")
	}
	if !sensitive {
		args["ignore_case"] = true
		cs = append(cs, tools.Coercion{Field: "/case_sensitive", To: "true", Rule: "gemini-cli's grep_search ignores case unless case_sensitive is true: toold's ignore_case"})
	}
	if v, ok := args["fixed_strings"]; ok {
		delete(args, "fixed_strings")
		if b, _ := boolOf(v); b {
			if p, isStr := args["pattern"].(string); isStr {
				args["pattern"] = regexp.QuoteMeta(p)
				cs = append(cs, tools.Coercion{Field: "/fixed_strings", From: js(p), To: js(args["pattern"]), Rule: "a fixed string is toold's pattern with its regular expression characters escaped"})
			}
		}
	}
	more, err := drop("no_ignore", "toold applies its own ignore rules")(args)
	return append(cs, more...), err
}

// msToWait moves a millisecond delay to get_output's wait_ms.
func msToWait(from string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		v, ok := args[from]
		if !ok {
			return nil, nil
		}
		n, isNum := number(v)
		if !isNum || n < 0 {
			return nil, invalid(from, "%q is a number of milliseconds, got %s", from, js(v))
		}
		delete(args, from)
		args["wait_ms"] = int(min(n, 600000))
		return []tools.Coercion{{Field: "/" + from, From: js(v), To: js(args["wait_ms"]), Rule: "milliseconds to wait are toold's wait_ms"}}, nil
	}
}
