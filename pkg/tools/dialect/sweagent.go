package dialect

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/toold/toold/pkg/tools"
)

// SWEAgentVersion is what the swe-agent dialect follows: the tool bundles
// of SWE-agent/SWE-agent at commit 3ea751c087f32b16e039a2233dd6eefecef325d5
// as get_function_calling_tool presents them (the built-in bash,
// tools/edit_anthropic str_replace_editor, tools/search, tools/windowed,
// tools/windowed_edit_replace, tools/submit), as checked in under
// upstream/swe-agent.json; edit's line-range form is
// tools/windowed_edit_linting's.
const SWEAgentVersion = "SWE-agent/SWE-agent@3ea751c087f32b16e039a2233dd6eefecef325d5 (tools/ bundles)"

// SWEAgent is SWE-agent's tool set.
func SWEAgent() tools.Dialect {
	return adopt(tools.Dialect{
		Name: "swe-agent", Agent: "SWE-agent", Version: SWEAgentVersion,
		Tools: []tools.DialectTool{
			{
				Name:        "bash",
				Description: "runs the given command directly in bash",
				Schema:      schema(`{"type":"object","properties":{"command":{"type":"string","description":"The bash command to execute."}},"required":["command"]}`),
				Target:      "run_command",
				Shape:       sweBashShape,
			},
			{
				Name:        "str_replace_editor",
				Description: "Custom editing tool for viewing, creating and editing files: view, create, str_replace, insert, undo_edit.",
				Schema:      schema(fmt.Sprintf(editorSchema, "")),
				Target:      "str_replace_based_edit_tool",
			},
			{
				Name:        "find_file",
				Description: "finds all files with the given name or pattern in dir (shell-style wildcards, e.g. *.py), searching recursively",
				Schema: schema(`{"type":"object","properties":{
"file_name":{"type":"string","description":"the name of the file or pattern to search for. supports shell-style wildcards (e.g. *.py)"},
"dir":{"type":"string","description":"the directory to search in (if not provided, searches in the current directory)"}},"required":["file_name"]}`),
				Target: "glob",
				Map:    findFileMap,
				Shape:  findFileShape,
			},
			{
				Name:        "search_dir",
				Description: "searches for search_term in all files in dir. If dir is not provided, searches in the current directory",
				Schema: schema(`{"type":"object","properties":{
"search_term":{"type":"string","description":"the term to search for"},
"dir":{"type":"string","description":"the directory to search in (if not provided, searches in the current directory)"}},"required":["search_term"]}`),
				Target: "grep_search",
				Map:    steps(literalTerm, rename("dir", "path")),
			},
			{
				Name:        "search_file",
				Description: "searches for search_term in file. If file is not provided, searches in the current open file",
				Schema: schema(`{"type":"object","properties":{
"search_term":{"type":"string","description":"the term to search for"},
"file":{"type":"string","description":"the file to search in (if not provided, searches in the current open file)"}},"required":["search_term"]}`),
				Target: "grep_search",
				MapIn:  searchFileMap,
			},
			windowTool("goto", `{"type":"object","properties":{"line_number":{"type":"integer"}},"required":["line_number"]}`),
			windowTool("open", `{"type":"object","properties":{"path":{"type":"string"},"line_number":{"type":"integer"}},"required":["path"]}`),
			{
				Name:        "create",
				Description: "creates and opens a new file with the given name",
				Schema:      schema(`{"type":"object","properties":{"filename":{"type":"string","description":"the name of the file to create"}},"required":["filename"]}`),
				Target:      "create_file",
				Map:         steps(rename("filename", "path"), set("content", "", "an empty file, as SWE-agent's create makes")),
				ShapeIn:     createShape,
			},
			windowTool("scroll_up", `{"type":"object"}`),
			windowTool("scroll_down", `{"type":"object"}`),
			{
				Name:        "edit",
				Description: "Replace first occurrence of <search> with <replace> in the currently displayed lines.",
				Schema: schema(`{"type":"object","properties":{
"search":{"type":"string"},"replace":{"type":"string"},"replace-all":{"type":"boolean"}},"required":["search","replace"]}`),
				// The windowed_edit_linting form (start_line, end_line,
				// replacement_text), run as replace_lines.
				Legacy:  []string{"start_line", "end_line", "replacement_text"},
				Target:  "edit_file",
				MapIn:   windowEditLines,
				ShapeIn: editShape,
			},
			{
				Name:        "insert",
				Description: "Insert <text> at the end of the currently opened file or after <line> if specified.",
				Schema:      schema(`{"type":"object","properties":{"text":{"type":"string"},"line":{"type":"integer"}},"required":["text"]}`),
				Target:      "str_replace_based_edit_tool",
				MapIn:       windowInsert,
			},
			{
				Name:        "submit",
				Description: "submits the current changes",
				Schema:      schema(`{"type":"object","properties":{}}`),
				Missing:     "there is no submit tool: the changes are in the workspace already; answer the user when the task is done",
			},
		},
	})
}

// findFileMap turns find_file's name or wildcard into a glob at any depth.
func findFileMap(args map[string]any) ([]tools.Coercion, error) {
	name, _ := args["file_name"].(string)
	if name == "" {
		return nil, invalid("file_name", "\"file_name\" is the file name or pattern, e.g. *.py")
	}
	delete(args, "file_name")
	p := "**/" + strings.TrimPrefix(name, "./")
	args["pattern"] = p
	cs := []tools.Coercion{{Field: "/file_name", From: js(name), To: js(p), Rule: "find_file searches every directory: toold's glob pattern **/NAME"}}
	more, err := rename("dir", "path")(args)
	return append(cs, more...), err
}

// literalTerm: search_dir and search_file search for the term literally.
func literalTerm(args map[string]any) ([]tools.Coercion, error) {
	t, _ := args["search_term"].(string)
	if t == "" {
		return nil, invalid("search_term", "\"search_term\" is the text to search for")
	}
	delete(args, "search_term")
	q := regexp.QuoteMeta(t)
	args["pattern"] = q
	return []tools.Coercion{{Field: "/search_term", From: js(t), To: js(q), Rule: "the term, literally, as toold's regular expression pattern"}}, nil
}

// windowTool is one of the window's moves (open, goto, scroll_up,
// scroll_down): read_file of the lines around the window, shaped as
// SWE-agent shows the window.
func windowTool(name, params string) tools.DialectTool {
	return tools.DialectTool{Name: name, Schema: schema(params), Target: "read_file", MapIn: windowMap(name), ShapeIn: windowShape(name)}
}

// windowEditLines maps both forms of edit: windowed_edit_linting's line
// range (start_line, end_line, replacement_text: toold's replace_lines of
// the open file) and windowed_edit_replace's search/replace (windowEdit).
func windowEditLines(conv string, args map[string]any) ([]tools.Coercion, error) {
	if _, ok := args["replacement_text"]; ok {
		return windowEditRange(conv, args)
	}
	return windowEdit(conv, args)
}

// sweBashShape gives bash's result as SWE-agent shows it: the output, or a
// note when there is none.
func sweBashShape(_ map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	out, _, _, _, ok := commandOutput(res)
	if err != nil || !ok {
		return res, err
	}
	if strings.TrimSpace(out) == "" {
		out = "Your command ran successfully and did not produce any output."
	}
	return withText(res, strings.TrimRight(out, "\n")), nil
}

// findFileShape gives find_file's result: Found N matches for "NAME" in
// DIR, then the paths.
func findFileShape(orig map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	name, _ := orig["file_name"].(string)
	dir, _ := orig["dir"].(string)
	if dir == "" {
		dir = "."
	}
	var paths []string
	for _, l := range strings.Split(res.Text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.Contains(l, " ") && !strings.HasPrefix(l, "/") {
			continue
		}
		paths = append(paths, l)
	}
	if len(paths) == 0 {
		return withText(res, fmt.Sprintf("No matches found for %q in %s", name, dir)), nil
	}
	return withText(res, fmt.Sprintf("Found %d matches for %q in %s:\n%s", len(paths), name, dir, strings.Join(paths, "\n"))), nil
}
