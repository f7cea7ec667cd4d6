package vcs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"mvdan.cc/sh/v3/syntax"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// Task is one task of the project.
type Task struct {
	// Source is make, npm, just, task or vscode.
	Source string `json:"source"`
	// Name is the task's name in its source.
	Name string `json:"name"`
	// Help is its description, when the file gives one (a Makefile
	// target's "## help", a script's command, a recipe's comment).
	Help string `json:"help,omitempty"`
	// File is where it was found, relative to the workspace.
	File string `json:"file"`
	// argv is the command that runs it (before the call's args); for
	// vscode tasks, the task's own command line.
	argv    []string
	cmdline string // vscode shell tasks: the command line as written
}

// QualifiedName is SOURCE:NAME.
func (t *Task) QualifiedName() string { return t.Source + ":" + t.Name }

// maxTaskFile bounds the task files read.
const maxTaskFile = 4 << 20

// readFile reads a task file of the workspace root through an os.Root, so
// a symlink cannot lead it out of the workspace.
func (v *VCS) readFile(name string) ([]byte, bool) {
	r, err := os.OpenRoot(v.root)
	if err != nil {
		return nil, false
	}
	defer r.Close()
	fi, err := r.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxTaskFile {
		return nil, false
	}
	b, err := r.ReadFile(name)
	return b, err == nil
}

// findTasks lists the tasks of the workspace root, in a stable order.
func (v *VCS) findTasks() []*Task {
	var out []*Task
	for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
		if b, ok := v.readFile(name); ok {
			out = append(out, makeTasks(b, name)...)
			break
		}
	}
	if b, ok := v.readFile("package.json"); ok {
		out = append(out, npmTasks(b, v.npmRunner())...)
	}
	for _, name := range []string{"justfile", "Justfile", ".justfile"} {
		if b, ok := v.readFile(name); ok {
			out = append(out, justTasks(b, name)...)
			break
		}
	}
	for _, name := range []string{"Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"} {
		if b, ok := v.readFile(name); ok {
			out = append(out, taskfileTasks(b, name)...)
			break
		}
	}
	if b, ok := v.readFile(".vscode/tasks.json"); ok {
		out = append(out, vscodeTasks(b)...)
	}
	return out
}

var makeTarget = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_./-]*(?:[ \t]+[A-Za-z0-9][A-Za-z0-9_./-]*)*)[ \t]*:([^=]|$)(.*)$`)

// makeTasks reads a Makefile's explicit targets and their "## help".
func makeTasks(b []byte, file string) []*Task {
	var out []*Task
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := makeTarget.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "\t") {
			continue
		}
		help := ""
		if i := strings.Index(line, "## "); i >= 0 {
			help = strings.TrimSpace(line[i+3:])
		}
		for _, name := range strings.Fields(m[1]) {
			if seen[name] || strings.Contains(name, "%") || strings.HasPrefix(name, ".") || strings.Contains(name, "/") || strings.Contains(name, "$") {
				continue
			}
			seen[name] = true
			out = append(out, &Task{Source: "make", Name: name, Help: help, File: file, argv: []string{"make", name}})
		}
	}
	return out
}

// npmRunner is the package manager the lock file names.
func (v *VCS) npmRunner() string {
	for _, c := range []struct{ lock, runner string }{{"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"}, {"bun.lockb", "bun"}, {"bun.lock", "bun"}} {
		if _, err := os.Lstat(filepath.Join(v.root, c.lock)); err == nil {
			return c.runner
		}
	}
	return "npm"
}

func npmTasks(b []byte, runner string) []*Task {
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return nil
	}
	names := make([]string, 0, len(pkg.Scripts))
	for n := range pkg.Scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*Task
	for _, n := range names {
		out = append(out, &Task{Source: "npm", Name: n, Help: pkg.Scripts[n], File: "package.json", argv: []string{runner, "run", n}})
	}
	return out
}

var justRecipe = regexp.MustCompile(`^@?([A-Za-z_][A-Za-z0-9_-]*)([^:]*):([^=]|$)`)

func justTasks(b []byte, file string) []*Task {
	var out []*Task
	comment := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			comment = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		case line == "" || line[0] == ' ' || line[0] == '\t':
			comment = ""
			continue
		}
		m := justRecipe.FindStringSubmatch(line)
		if m == nil {
			comment = ""
			continue
		}
		switch m[1] {
		case "set", "alias", "export", "import", "mod":
			comment = ""
			continue
		}
		out = append(out, &Task{Source: "just", Name: m[1], Help: comment, File: file, argv: []string{"just", m[1]}})
		comment = ""
	}
	return out
}

func taskfileTasks(b []byte, file string) []*Task {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	var out []*Task
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "tasks" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		ts := root.Content[i+1]
		for j := 0; j+1 < len(ts.Content); j += 2 {
			name := ts.Content[j].Value
			help := ""
			if body := ts.Content[j+1]; body.Kind == yaml.MappingNode {
				for k := 0; k+1 < len(body.Content); k += 2 {
					if body.Content[k].Value == "desc" || (help == "" && body.Content[k].Value == "summary") {
						help = strings.TrimSpace(body.Content[k+1].Value)
					}
				}
			}
			out = append(out, &Task{Source: "task", Name: name, Help: help, File: file, argv: []string{"task", name}})
		}
	}
	return out
}

// vscodeTasks reads .vscode/tasks.json (JSON with comments and trailing
// commas). Tasks whose command uses ${...} variables other than the
// workspace folder are left out: what they run is not known here.
func vscodeTasks(b []byte) []*Task {
	var doc struct {
		Tasks []struct {
			Label   string            `json:"label"`
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []json.RawMessage `json:"args"`
			Detail  string            `json:"detail"`
		} `json:"tasks"`
	}
	if json.Unmarshal(stripJSONC(b), &doc) != nil {
		return nil
	}
	var out []*Task
	for _, t := range doc.Tasks {
		if t.Label == "" || t.Command == "" || (t.Type != "shell" && t.Type != "process") {
			continue
		}
		args := []string{}
		ok := true
		for _, a := range t.Args {
			var s string
			if json.Unmarshal(a, &s) != nil {
				var q struct {
					Value string `json:"value"`
				}
				if json.Unmarshal(a, &q) != nil {
					ok = false
					break
				}
				s = q.Value
			}
			args = append(args, s)
		}
		cmd := expandVSCode(t.Command)
		for i := range args {
			args[i] = expandVSCode(args[i])
		}
		if !ok || strings.Contains(cmd, "${") || slices.ContainsFunc(args, func(s string) bool { return strings.Contains(s, "${") }) {
			continue
		}
		task := &Task{Source: "vscode", Name: t.Label, Help: t.Detail, File: ".vscode/tasks.json"}
		if t.Type == "shell" {
			// A shell task's command is a command line; its args are words.
			task.cmdline = cmd
			for _, a := range args {
				task.cmdline += " " + quote(a)
			}
		} else {
			task.argv = append([]string{cmd}, args...)
		}
		out = append(out, task)
	}
	return out
}

func expandVSCode(s string) string {
	for _, v := range []string{"${workspaceFolder}", "${workspaceRoot}"} {
		s = strings.ReplaceAll(s, v, ".")
	}
	return s
}

// stripJSONC removes // and /* */ comments and trailing commas outside
// strings.
func stripJSONC(b []byte) []byte {
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i++
		case c == ']' || c == '}':
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\n' || out[j] == '\t' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// quote quotes a word for bash.
func quote(s string) string {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		// Only strings bash cannot hold (NUL) fail; callers refuse them.
		return "''"
	}
	return q
}

// resolveTask finds a task by name (SOURCE:NAME, or NAME when only one
// source has it).
func (v *VCS) resolveTask(name string) (*Task, error) {
	tasks := v.findTasks()
	var found []*Task
	for _, t := range tasks {
		if t.QualifiedName() == name {
			return t, nil
		}
		if t.Name == name {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, errdefs.Invalid("/name", "exists", "no task %q in the workspace; list_tasks lists them", name)
	}
	var names []string
	for _, t := range found {
		names = append(names, t.QualifiedName())
	}
	return nil, errdefs.Invalid("/name", "unique", "task %q exists in several places; name one of %s", name, strings.Join(names, ", "))
}

// commandLine is what run_task runs for t with args: the task's command
// and the args, each quoted as one word.
func (t *Task) commandLine(args []string) string {
	var words []string
	for _, a := range t.argv {
		words = append(words, quote(a))
	}
	line := strings.Join(words, " ")
	if t.cmdline != "" {
		line = t.cmdline
	}
	if len(args) > 0 {
		switch t.Source {
		case "npm", "task":
			if t.argv[0] != "yarn" {
				line += " --"
			}
		}
		for _, a := range args {
			line += " " + quote(a)
		}
	}
	return line
}

var listTasksOp = &operation{
	name:        "list_tasks",
	description: "List the project's tasks: Makefile targets (with their ## help), package.json scripts, justfile recipes, Taskfile.yml tasks and .vscode/tasks.json tasks, each as SOURCE:NAME.",
	risk:        tools.RiskLow,
	schema:      `{"type": "object", "properties": {}, "additionalProperties": false}`,
	describe: func(*VCS, *tools.Call) tools.Effect {
		return tools.Effect{Display: "Listing the project's tasks", Reads: []string{"."}}
	},
	run: func(v *VCS, _ context.Context, _ *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		tasks := v.findTasks()
		var b strings.Builder
		items := make([]any, 0, len(tasks))
		for _, t := range tasks {
			items = append(items, map[string]any{"source": t.Source, "name": t.Name, "help": t.Help, "file": t.File, "command": t.commandLine(nil)})
			fmt.Fprintf(&b, "%s", t.QualifiedName())
			if t.Help != "" {
				fmt.Fprintf(&b, " — %s", tools.Clip(t.Help, 100))
			}
			b.WriteString("\n")
		}
		if len(tasks) == 0 {
			b.WriteString("No tasks found (looked for a Makefile, package.json scripts, a justfile, Taskfile.yml and .vscode/tasks.json in the workspace root).")
		}
		text, trunc := v.shapeText(strings.TrimRight(b.String(), "\n"))
		return &tools.Result{Text: text, Truncation: trunc, Structured: map[string]any{"tasks": items}}, nil
	},
}

var runTaskOp = &operation{
	name: "run_task",
	description: "Run one of the project's tasks (see list_tasks) with optional extra arguments, like run_command runs its command line: " +
		"output streams, long output is kept for read_output, and policy judges the command it expands to (make test, npm run build -- --watch...).",
	risk: tools.RiskHigh,
	long: true,
	schema: `{"type": "object", "properties": {
  "name": {"type": "string", "minLength": 1, "description": "The task: SOURCE:NAME as list_tasks shows it, or NAME when only one source has it."},
  "args": {"type": "array", "items": {"type": "string"}, "description": "Extra arguments, each passed as one word."},
  "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the task and everything it started are stopped."}
}, "required": ["name"], "additionalProperties": false}`,
	describe: func(v *VCS, call *tools.Call) tools.Effect {
		t, line, err := v.expand(call)
		if err != nil {
			// Run reports the error; until then, judge it as the unknown
			// command it is.
			return tools.Effect{Display: "Running task " + tools.Clip(strArg(call, "name"), 40), Risk: tools.RiskHigh}
		}
		v.mu.Lock()
		now := time.Now()
		for c, e := range v.expanded {
			if now.Sub(e.at) > 30*time.Minute {
				delete(v.expanded, c)
			}
		}
		v.expanded[call] = expandedTask{task: t, command: line, at: now}
		v.mu.Unlock()
		return tools.Effect{Display: "Running task " + t.QualifiedName() + ": " + tools.Clip(line, 60), Risk: tools.RiskHigh, Command: line, Dir: "."}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, sink *tools.Sink) (*tools.Result, error) {
		v.mu.Lock()
		e, ok := v.expanded[call]
		delete(v.expanded, call)
		v.mu.Unlock()
		if !ok {
			// Not described first (the pipeline always describes): expand
			// now; nothing was judged on an older expansion.
			t, line, err := v.expand(call)
			if err != nil {
				return nil, err
			}
			e = expandedTask{task: t, command: line}
		}
		if v.opts.Terminal == nil {
			return nil, errdefs.New(errdefs.ErrUnavailable, "run_task is not available on this toold (no terminal)")
		}
		args := map[string]any{"command": e.command}
		if to, ok := call.Args["timeout"]; ok {
			args["timeout"] = to
		}
		tc := &tools.Call{ID: call.ID, ConversationID: call.ConversationID, Tool: "terminal_operations", Operation: "run_command", Args: args, Outside: call.Outside}
		res, err := v.opts.Terminal.Run(ctx, tc, sink)
		if res != nil {
			if res.Structured == nil {
				res.Structured = map[string]any{}
			}
			res.Structured["task"] = e.task.QualifiedName()
			res.Structured["command"] = e.command
			res.Text = "$ " + e.command + "\n" + res.Text
		}
		return res, err
	},
}

// expand resolves a run_task call to its task and command line.
func (v *VCS) expand(call *tools.Call) (*Task, string, error) {
	if v.root == "" {
		return nil, "", errdefs.New(errdefs.ErrUnavailable, "%s is not available on this toold", ToolName)
	}
	args := stringsArg(call, "args")
	for i, a := range args {
		if strings.ContainsRune(a, 0) {
			return nil, "", errdefs.Invalid(fmt.Sprintf("/args/%d", i), "format", "argument %d has a NUL byte", i)
		}
	}
	t, err := v.resolveTask(strArg(call, "name"))
	if err != nil {
		return nil, "", err
	}
	return t, t.commandLine(args), nil
}
