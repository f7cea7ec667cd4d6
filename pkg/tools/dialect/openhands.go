package dialect

import (
	"fmt"
	"strings"

	"github.com/toold/toold/pkg/tools"
)

// OpenHandsVersion is what the openhands dialect follows: the CodeAct
// agent's function-calling tools of All-Hands-AI/OpenHands at commit
// 156d0686c46aafb0fa9d291da6421fb6f64dddc0 (0.62.0),
// openhands/agenthub/codeact_agent/tools (bash.py execute_bash,
// str_replace_editor.py, think.py, finish.py, ipython.py, task_tracker.py;
// browser.py by name), as checked in under upstream/openhands.json.
const OpenHandsVersion = "All-Hands-AI/OpenHands@156d0686c46aafb0fa9d291da6421fb6f64dddc0 (0.62.0, openhands/agenthub/codeact_agent/tools)"

var editorSchema = `{"type":"object","properties":{
"command":{"type":"string","enum":["view","create","str_replace","insert","undo_edit"],"description":"The commands to run. Allowed options are: view, create, str_replace, insert, undo_edit."},
"path":{"type":"string","description":"Absolute path to file or directory, e.g. /workspace/file.py or /workspace."},
"file_text":{"type":"string","description":"Required parameter of create command, with the content of the file to be created."},
"old_str":{"type":"string","description":"Required parameter of str_replace command containing the string in path to replace."},
"new_str":{"type":"string","description":"Optional parameter of str_replace command containing the new string. Required parameter of insert command containing the string to insert."},
"insert_line":{"type":"integer","description":"Required parameter of insert command. The new_str will be inserted AFTER the line insert_line of path."},
"view_range":{"type":"array","items":{"type":"integer"},"description":"Optional parameter of view command when path points to a file, e.g. [11, 12]; [start_line, -1] shows all lines from start_line to the end."}%s},
"required":["command","path"]}`

// OpenHands is the OpenHands CodeAct agent's tool set.
func OpenHands() tools.Dialect {
	risk := `,"security_risk":{"type":"string","enum":["LOW","MEDIUM","HIGH"],"description":"The LLM's assessment of the safety risk of this action."}`
	dropRisk := drop("security_risk", "toold's policy judges the risk itself")
	return adopt(tools.Dialect{
		Name: "openhands", Agent: "OpenHands", Version: OpenHandsVersion,
		Tools: []tools.DialectTool{
			{
				Name:        "execute_bash",
				Description: "Execute a bash command in the terminal. Long-running commands: run them in the background (command &) and read their output later.",
				Schema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"The bash command to execute."},
"is_input":{"type":"string","enum":["true","false"],"description":"If True, the command is an input to the running process. If False, the command is a bash command to be executed in the terminal. Default is False."},
"timeout":{"type":"number","description":"Optional. Sets a hard timeout in seconds for the command execution."}` + risk + `},"required":["command"]}`),
				Target: "run_command",
				Map: steps(
					dropIf("is_input", []any{"false", false}, "toold's run_command runs a new command each call: to type into a running program, start it in a terminal session (create_session) and use send_input"),
					dropRisk,
				),
				Shape: openHandsShape,
			},
			{
				Name:        "str_replace_editor",
				Description: "Custom editing tool for viewing, creating and editing files in plain-text format.",
				Schema:      schema(fmt.Sprintf(editorSchema, risk)),
				Target:      "str_replace_based_edit_tool",
				Map:         steps(dropRisk),
			},
			{
				Name:        "think",
				Description: "Use the tool to think about something. It will not obtain new information or make any changes.",
				Schema:      schema(`{"type":"object","properties":{"thought":{"type":"string","description":"The thought to log."}},"required":["thought"]}`),
				Target:      "think",
			},
			{
				Name:        "task_tracker",
				Description: "Keeps a structured task list: view shows it, plan replaces it.",
				Schema: schema(`{"type":"object","properties":{
"command":{"type":"string","enum":["view","plan"]},
"task_list":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"},"status":{"type":"string","enum":["todo","in_progress","done"]},"notes":{"type":"string"}},"required":["title","status"]}}},"required":["command"]}`),
				Target: "manage_todos",
				Map:    taskTrackerMap,
			},
			{
				Name:        "finish",
				Description: "Signals the completion of the current task or conversation.",
				Schema:      schema(`{"type":"object","properties":{"message":{"type":"string"},"task_completed":{"type":"string"}},"required":["message"]}`),
				Missing:     "there is no finish tool: answer the user directly when the task is done",
			},
			{
				Name:        "browser",
				Description: "Interact with the browser using Python code (goto, click, fill, …).",
				Schema:      schema(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`),
				Missing:     browserTools,
			},
			{
				Name:        "execute_ipython_cell",
				Description: "Run a cell of Python code in an IPython environment.",
				Schema:      schema(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`),
				Missing:     "toold has no Python kernel: run python3 with execute_bash (python3 -c '...', or a script written with str_replace_editor create)",
			},
		},
	})
}

// taskTrackerMap maps task_tracker onto manage_todos (view is read).
func taskTrackerMap(args map[string]any) ([]tools.Coercion, error) {
	cmd, _ := args["command"].(string)
	delete(args, "command")
	switch cmd {
	case "view":
		args["action"] = "read"
		delete(args, "task_list")
		return []tools.Coercion{{Field: "/command", From: `"view"`, To: `"read"`, Rule: "view is manage_todos read"}}, nil
	case "plan":
		args["todos"] = args["task_list"]
		delete(args, "task_list")
		for _, it := range asList(args["todos"]) {
			if m, ok := it.(map[string]any); ok {
				delete(m, "notes")
			}
		}
		return todoMap("title", "status", map[string]string{"todo": "pending", "in_progress": "in_progress", "done": "completed"}, "notes")(args)
	}
	return nil, invalid("command", "\"command\" is view or plan")
}

func asList(v any) []any { l, _ := v.([]any); return l }

// openHandsShape gives execute_bash's result as OpenHands' observation
// reads: the output, then "[The command completed with exit code N.]".
func openHandsShape(_ map[string]any, res *tools.Result, err error) (*tools.Result, error) {
	out, exit, _, _, ok := commandOutput(res)
	if err != nil || !ok {
		return res, err
	}
	out = strings.TrimRight(out, "\n")
	if out != "" {
		out += "\n"
	}
	return withText(res, fmt.Sprintf("%s[The command completed with exit code %d.]", out, exit)), nil
}
