package vcs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// StatusEntry is one path of git_status.
type StatusEntry struct {
	// Kind is changed, renamed, copied, unmerged, untracked or ignored.
	Kind string `json:"kind"`
	Path string `json:"path"`
	// OrigPath is the path before a rename or copy.
	OrigPath string `json:"orig_path,omitempty"`
	// Index and Worktree are the status letters (M, A, D, R, C, T, U, or
	// "." for unchanged).
	Index    string `json:"index,omitempty"`
	Worktree string `json:"worktree,omitempty"`
	// Submodule is set for a submodule's entry.
	Submodule bool `json:"submodule,omitempty"`
}

// Status is git_status's structured result.
type Status struct {
	Branch   string        `json:"branch"`
	Detached bool          `json:"detached"`
	Commit   string        `json:"commit"`
	Upstream string        `json:"upstream,omitempty"`
	Ahead    int           `json:"ahead"`
	Behind   int           `json:"behind"`
	Entries  []StatusEntry `json:"entries"`
}

// parseStatus reads `git status --porcelain=v2 --branch -z`.
func parseStatus(out []byte) Status {
	var st Status
	recs := records(out, 0)
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		switch {
		case strings.HasPrefix(r, "# branch.oid "):
			st.Commit = strings.TrimPrefix(r, "# branch.oid ")
		case strings.HasPrefix(r, "# branch.head "):
			st.Branch = strings.TrimPrefix(r, "# branch.head ")
			st.Detached = st.Branch == "(detached)"
		case strings.HasPrefix(r, "# branch.upstream "):
			st.Upstream = strings.TrimPrefix(r, "# branch.upstream ")
		case strings.HasPrefix(r, "# branch.ab "):
			f := strings.Fields(strings.TrimPrefix(r, "# branch.ab "))
			if len(f) == 2 {
				st.Ahead, _ = strconv.Atoi(strings.TrimPrefix(f[0], "+"))
				st.Behind, _ = strconv.Atoi(strings.TrimPrefix(f[1], "-"))
			}
		case strings.HasPrefix(r, "1 "):
			f := strings.SplitN(r, " ", 9)
			if len(f) == 9 {
				st.Entries = append(st.Entries, StatusEntry{Kind: "changed", Index: f[1][:1], Worktree: f[1][1:], Path: f[8], Submodule: f[2][0] == 'S'})
			}
		case strings.HasPrefix(r, "2 "):
			f := strings.SplitN(r, " ", 10)
			if len(f) == 10 {
				e := StatusEntry{Kind: "renamed", Index: f[1][:1], Worktree: f[1][1:], Path: f[9], Submodule: f[2][0] == 'S'}
				if strings.HasPrefix(f[8], "C") {
					e.Kind = "copied"
				}
				if i+1 < len(recs) {
					i++
					e.OrigPath = recs[i]
				}
				st.Entries = append(st.Entries, e)
			}
		case strings.HasPrefix(r, "u "):
			f := strings.SplitN(r, " ", 11)
			if len(f) == 11 {
				st.Entries = append(st.Entries, StatusEntry{Kind: "unmerged", Index: f[1][:1], Worktree: f[1][1:], Path: f[10]})
			}
		case strings.HasPrefix(r, "? "):
			st.Entries = append(st.Entries, StatusEntry{Kind: "untracked", Path: r[2:]})
		case strings.HasPrefix(r, "! "):
			st.Entries = append(st.Entries, StatusEntry{Kind: "ignored", Path: r[2:]})
		}
	}
	return st
}

func (st Status) text() string {
	var b strings.Builder
	switch {
	case st.Detached:
		fmt.Fprintf(&b, "HEAD detached at %s\n", short(st.Commit))
	case st.Commit == "(initial)":
		fmt.Fprintf(&b, "On branch %s (no commits yet)\n", st.Branch)
	default:
		fmt.Fprintf(&b, "On branch %s at %s", st.Branch, short(st.Commit))
		if st.Upstream != "" {
			fmt.Fprintf(&b, ", tracking %s (ahead %d, behind %d)", st.Upstream, st.Ahead, st.Behind)
		}
		b.WriteString("\n")
	}
	if len(st.Entries) == 0 {
		b.WriteString("Nothing to commit, working tree clean.")
		return b.String()
	}
	groups := []struct {
		title string
		keep  func(StatusEntry) bool
		code  func(StatusEntry) string
	}{
		{"Unmerged (conflicts)", func(e StatusEntry) bool { return e.Kind == "unmerged" }, func(e StatusEntry) string { return e.Index + e.Worktree }},
		{"Staged", func(e StatusEntry) bool { return e.Kind != "unmerged" && e.Index != "" && e.Index != "." },
			func(e StatusEntry) string { return e.Index }},
		{"Not staged", func(e StatusEntry) bool { return e.Kind != "unmerged" && e.Worktree != "" && e.Worktree != "." },
			func(e StatusEntry) string { return e.Worktree }},
		{"Untracked", func(e StatusEntry) bool { return e.Kind == "untracked" }, func(StatusEntry) string { return "?" }},
	}
	for _, g := range groups {
		first := true
		for _, e := range st.Entries {
			if !g.keep(e) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "%s:\n", g.title)
				first = false
			}
			p := e.Path
			if e.OrigPath != "" && g.title == "Staged" {
				p = e.OrigPath + " -> " + e.Path
			}
			fmt.Fprintf(&b, "  %-2s %s\n", g.code(e), p)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

var gitStatusOp = &operation{
	name:        "git_status",
	description: "The repository's state: branch (or detached HEAD), upstream, and each changed, staged, renamed, conflicted and untracked path.",
	risk:        tools.RiskLow,
	schema:      `{"type": "object", "properties": {}, "additionalProperties": false}`,
	describe: func(*VCS, *tools.Call) tools.Effect {
		return tools.Effect{Display: "git status", Reads: []string{"."}}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		r, err := v.runGit(ctx, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--ignore-submodules=dirty")
		if err != nil {
			return nil, err
		}
		if r.exit != 0 {
			return nil, failed("git_status", r)
		}
		st := parseStatus(r.stdout)
		entries := make([]any, len(st.Entries))
		for i, e := range st.Entries {
			m := map[string]any{"kind": e.Kind, "path": e.Path}
			if e.OrigPath != "" {
				m["orig_path"] = e.OrigPath
			}
			if e.Index != "" {
				m["index"], m["worktree"] = e.Index, e.Worktree
			}
			entries[i] = m
		}
		text, trunc := v.shapeText(st.text())
		return &tools.Result{Text: text, Truncation: trunc, Structured: map[string]any{
			"branch": st.Branch, "detached": st.Detached, "commit": st.Commit, "upstream": st.Upstream,
			"ahead": st.Ahead, "behind": st.Behind, "entries": entries,
		}}, nil
	},
}

var gitDiffOp = &operation{
	name:        "git_diff",
	description: "Show changes as a unified diff: of the working tree against the index (default), of the index against HEAD (staged), or against a ref; optionally only some paths.",
	risk:        tools.RiskLow,
	schema: `{"type": "object", "properties": {
  "staged": {"type": "boolean", "description": "Diff the staged changes (index against HEAD, or against ref)."},
  "paths": {"type": "array", "items": {"type": "string"}, "description": "Only these paths (relative to the workspace)."},
  "ref": {"type": "string", "description": "Compare with this commit, branch or tag instead."}
}, "additionalProperties": false}`,
	describe: func(v *VCS, call *tools.Call) tools.Effect {
		paths := stringsArg(call, "paths")
		reads := paths
		if len(reads) == 0 {
			reads = []string{"."}
		}
		return tools.Effect{Display: "git diff " + joinPreview(paths), Reads: reads}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Staged bool     `json:"staged"`
			Paths  []string `json:"paths"`
			Ref    string   `json:"ref"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if err := checkRef("/ref", a.Ref); err != nil {
			return nil, err
		}
		paths, err := v.checkPaths(a.Paths)
		if err != nil {
			return nil, err
		}
		base := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M", "--ignore-submodules=dirty"}
		if a.Staged {
			base = append(base, "--cached")
		}
		tail := []string{"--end-of-options"}
		if a.Ref != "" {
			tail = append(tail, a.Ref)
		}
		tail = append(tail, "--")
		tail = append(tail, paths...)
		stat, err := v.runGit(ctx, append(append(append([]string{}, base...), "--numstat", "-z"), tail...)...)
		if err != nil {
			return nil, err
		}
		if stat.exit != 0 {
			return nil, failed("git_diff", stat)
		}
		patch, err := v.runGit(ctx, append(append([]string{}, base...), tail...)...)
		if err != nil {
			return nil, err
		}
		if patch.exit != 0 {
			return nil, failed("git_diff", patch)
		}
		files := parseNumstat(stat.stdout)
		text := string(patch.stdout)
		if text == "" {
			text = "No differences."
		}
		text = strings.ToValidUTF8(text, "\uFFFD")
		text, trunc := v.shapeText(text)
		return &tools.Result{Text: text, Truncation: trunc, Structured: map[string]any{"files": files}}, nil
	},
}

// parseNumstat reads `git diff --numstat -z`: "ADD\tDEL\tPATH\0", or for
// a rename "ADD\tDEL\t\0OLD\0NEW\0"; binary files have "-" counts.
func parseNumstat(out []byte) []any {
	var files []any
	recs := records(out, 0)
	for i := 0; i < len(recs); i++ {
		f := strings.SplitN(recs[i], "\t", 3)
		if len(f) != 3 {
			continue
		}
		m := map[string]any{}
		if f[0] == "-" && f[1] == "-" {
			m["binary"] = true
		} else {
			m["added"], _ = strconv.Atoi(f[0])
			m["deleted"], _ = strconv.Atoi(f[1])
		}
		if f[2] == "" && i+2 < len(recs) {
			m["orig_path"], m["path"] = recs[i+1], recs[i+2]
			i += 2
		} else {
			m["path"] = f[2]
		}
		files = append(files, m)
	}
	return files
}

var gitLogOp = &operation{
	name:        "git_log",
	description: "Recent commits (hash, author, date, subject), newest first; optionally of a ref or touching a path.",
	risk:        tools.RiskLow,
	schema: `{"type": "object", "properties": {
  "n": {"type": "integer", "minimum": 1, "maximum": 500, "description": "How many commits (default 20)."},
  "path": {"type": "string", "description": "Only commits touching this path."},
  "ref": {"type": "string", "description": "Start from this commit, branch or range (default HEAD)."}
}, "additionalProperties": false}`,
	describe: func(v *VCS, call *tools.Call) tools.Effect {
		return tools.Effect{Display: "git log " + strArg(call, "ref") + " " + strArg(call, "path"), Reads: []string{"."}}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			N    int    `json:"n"`
			Path string `json:"path"`
			Ref  string `json:"ref"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if a.N <= 0 {
			a.N = 20
		}
		if err := checkRef("/ref", a.Ref); err != nil {
			return nil, err
		}
		args := []string{"log", "--no-color", "-n", strconv.Itoa(a.N), "--format=%H%x00%an%x00%ae%x00%aI%x00%P%x00%s%x1e", "--end-of-options"}
		if a.Ref != "" {
			args = append(args, a.Ref)
		}
		args = append(args, "--")
		if a.Path != "" {
			p, err := v.checkPaths([]string{a.Path})
			if err != nil {
				return nil, err
			}
			args = append(args, p...)
		}
		r, err := v.runGit(ctx, args...)
		if err != nil {
			return nil, err
		}
		if r.exit != 0 {
			if strings.Contains(string(r.stderr), "does not have any commits yet") {
				return &tools.Result{Text: "No commits yet.", Structured: map[string]any{"commits": []any{}}}, nil
			}
			return nil, failed("git_log", r)
		}
		var b strings.Builder
		commits := []any{}
		for _, rec := range records(r.stdout, 0x1e) {
			f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
			if len(f) != 6 {
				continue
			}
			commits = append(commits, map[string]any{"commit": f[0], "author": f[1], "email": f[2], "date": f[3], "parents": strings.Fields(f[4]), "subject": f[5]})
			fmt.Fprintf(&b, "%s %s %s %s\n", short(f[0]), f[3][:min(10, len(f[3]))], f[1], f[5])
		}
		if len(commits) == 0 {
			b.WriteString("No commits.")
		}
		text, trunc := v.shapeText(strings.TrimRight(b.String(), "\n"))
		return &tools.Result{Text: text, Truncation: trunc, Structured: map[string]any{"commits": commits}}, nil
	},
}

var gitShowOp = &operation{
	name:        "git_show",
	description: "Show a commit (message and patch), or with path the file's content at that commit.",
	risk:        tools.RiskLow,
	schema: `{"type": "object", "properties": {
  "ref": {"type": "string", "description": "The commit, branch or tag (default HEAD)."},
  "path": {"type": "string", "description": "Show this file as it is in ref instead of the commit."}
}, "additionalProperties": false}`,
	describe: func(v *VCS, call *tools.Call) tools.Effect {
		// With path, the file's content (at ref) is what is read: policy
		// judges that path, so a committed .env stays a sensitive path.
		reads := []string{"."}
		if p := strArg(call, "path"); p != "" {
			reads = []string{p}
		}
		return tools.Effect{Display: "git show " + strArg(call, "ref") + " " + strArg(call, "path"), Reads: reads}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Ref  string `json:"ref"`
			Path string `json:"path"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if a.Ref == "" {
			a.Ref = "HEAD"
		}
		if err := checkRef("/ref", a.Ref); err != nil {
			return nil, err
		}
		if strings.Contains(a.Ref, ":") {
			return nil, errdefs.Invalid("/ref", "format", "ref %q: give the file in path, not ref:path", a.Ref)
		}
		var args []string
		if a.Path != "" {
			p, err := v.checkPaths([]string{a.Path})
			if err != nil {
				return nil, err
			}
			args = []string{"show", "--no-textconv", "--end-of-options", a.Ref + ":" + p[0]}
		} else {
			args = []string{"show", "--no-ext-diff", "--no-textconv", "--no-color", "--stat", "--patch", "--format=fuller", "--end-of-options", a.Ref, "--"}
		}
		r, err := v.runGit(ctx, args...)
		if err != nil {
			return nil, err
		}
		if r.exit != 0 {
			return nil, failed("git_show", r)
		}
		out := r.stdout
		if a.Path != "" && (!utf8.Valid(out) || strings.ContainsRune(string(out[:min(len(out), 8000)]), 0)) {
			return &tools.Result{Text: fmt.Sprintf("%s:%s is a binary file (%d bytes); not shown.", a.Ref, a.Path, len(out)),
				Structured: map[string]any{"binary": true, "bytes": len(out)}}, nil
		}
		text, trunc := v.shapeText(strings.ToValidUTF8(string(out), "\uFFFD"))
		return &tools.Result{Text: text, Truncation: trunc, Structured: map[string]any{"ref": a.Ref, "path": a.Path, "bytes": len(out)}}, nil
	},
}

var gitBranchOp = &operation{
	name:        "git_branch",
	description: "List branches (action list, the default), create one (action create, name, optional start_point), or switch to one (action switch, name).",
	risk:        tools.RiskLow,
	schema: `{"type": "object", "properties": {
  "action": {"type": "string", "enum": ["list", "create", "switch"], "description": "Default list."},
  "name": {"type": "string", "description": "The branch to create or switch to."},
  "start_point": {"type": "string", "description": "For create: where the branch starts (default HEAD)."}
}, "additionalProperties": false}`,
	describe: func(v *VCS, call *tools.Call) tools.Effect {
		switch strArg(call, "action") {
		case "create":
			return tools.Effect{Display: "git branch " + strArg(call, "name"), Risk: tools.RiskMedium, Writes: []string{".git"}}
		case "switch":
			return tools.Effect{Display: "git switch " + strArg(call, "name"), Risk: tools.RiskMedium, Writes: []string{"."}}
		}
		return tools.Effect{Display: "git branch --list", Reads: []string{"."}}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Action     string `json:"action"`
			Name       string `json:"name"`
			StartPoint string `json:"start_point"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if a.Action == "" || a.Action == "list" {
			r, err := v.runGit(ctx, "for-each-ref", "--format=%(HEAD)%00%(refname:short)%00%(objectname)%00%(upstream:short)", "refs/heads")
			if err != nil {
				return nil, err
			}
			if r.exit != 0 {
				return nil, failed("git_branch", r)
			}
			var b strings.Builder
			branches := []any{}
			for _, line := range records(r.stdout, '\n') {
				f := strings.Split(line, "\x00")
				if len(f) != 4 {
					continue
				}
				cur := f[0] == "*"
				branches = append(branches, map[string]any{"name": f[1], "commit": f[2], "upstream": f[3], "current": cur})
				mark := " "
				if cur {
					mark = "*"
				}
				fmt.Fprintf(&b, "%s %s %s\n", mark, f[1], short(f[2]))
			}
			if len(branches) == 0 {
				b.WriteString("No branches yet.")
			}
			return &tools.Result{Text: strings.TrimRight(b.String(), "\n"), Structured: map[string]any{"branches": branches}}, nil
		}
		if a.Name == "" {
			return nil, errdefs.Invalid("/name", "required", "git_branch %s needs name", a.Action)
		}
		if err := checkRef("/name", a.Name); err != nil {
			return nil, err
		}
		if r, err := v.runGit(ctx, "check-ref-format", "--branch", a.Name); err != nil {
			return nil, err
		} else if r.exit != 0 {
			return nil, errdefs.Invalid("/name", "format", "%q is not a valid branch name", a.Name)
		}
		var args []string
		switch a.Action {
		case "create":
			if err := checkRef("/start_point", a.StartPoint); err != nil {
				return nil, err
			}
			args = []string{"branch", "--no-track", "--end-of-options", a.Name}
			if a.StartPoint != "" {
				args = append(args, a.StartPoint)
			}
		case "switch":
			args = []string{"switch", "--no-guess", "--no-recurse-submodules", "--end-of-options", a.Name}
		}
		r, err := v.runGit(ctx, args...)
		if err != nil {
			return nil, err
		}
		if r.exit != 0 {
			return nil, failed("git_branch "+a.Action, r)
		}
		msg := fmt.Sprintf("Created branch %s.", a.Name)
		if a.Action == "switch" {
			msg = fmt.Sprintf("Switched to branch %s.", a.Name)
		}
		return &tools.Result{Text: msg, Structured: map[string]any{"action": a.Action, "name": a.Name}}, nil
	},
}

var gitCommitOp = &operation{
	name: "git_commit",
	description: "Commit: with paths, stage those paths first (changes, additions and deletions) and commit; without, commit what is staged. " +
		"Never pushes (push with run_command, under its rules). The repository's hooks do not run unless toold is configured to let them (vcs.hooks).",
	risk: tools.RiskMedium,
	schema: `{"type": "object", "properties": {
  "message": {"type": "string", "minLength": 1, "description": "The commit message."},
  "paths": {"type": "array", "items": {"type": "string"}, "description": "Paths to stage before committing (relative to the workspace)."}
}, "required": ["message"], "additionalProperties": false}`,
	describe: func(v *VCS, call *tools.Call) tools.Effect {
		writes := append([]string{".git"}, stringsArg(call, "paths")...)
		return tools.Effect{Display: "git commit: " + tools.Clip(strArg(call, "message"), 60), Reads: stringsArg(call, "paths"), Writes: writes[:1], Risk: tools.RiskMedium}
	},
	run: func(v *VCS, ctx context.Context, call *tools.Call, _ *tools.Sink) (*tools.Result, error) {
		var a struct {
			Message string   `json:"message"`
			Paths   []string `json:"paths"`
		}
		if err := bind(call, &a); err != nil {
			return nil, err
		}
		if strings.ContainsRune(a.Message, 0) {
			return nil, errdefs.Invalid("/message", "format", "the message has a NUL byte")
		}
		paths, err := v.checkPaths(a.Paths)
		if err != nil {
			return nil, err
		}
		if len(paths) > 0 {
			if err := v.refuseNestedRepositories(ctx, paths); err != nil {
				return nil, err
			}
			if err := v.stage(ctx, paths); err != nil {
				return nil, err
			}
		}
		args := []string{"commit", "--no-edit", "--cleanup=strip", "-m", a.Message}
		if !v.opts.Hooks {
			args = append(args, "--no-verify")
		}
		r, err := v.runGit(ctx, args...)
		if err != nil {
			return nil, err
		}
		if r.exit != 0 {
			out := string(r.stdout) + string(r.stderr)
			if strings.Contains(out, "nothing to commit") || strings.Contains(out, "no changes added to commit") || strings.Contains(out, "nothing added to commit") {
				return nil, errdefs.Failed("git_commit: nothing is staged; pass the paths to commit")
			}
			return nil, failed("git_commit", r)
		}
		head, err := v.runGit(ctx, "log", "-1", "--format=%H%x00%s")
		if err != nil {
			return nil, err
		}
		f := strings.SplitN(strings.TrimSpace(string(head.stdout)), "\x00", 2)
		if len(f) != 2 {
			return nil, failed("git_commit", head)
		}
		stat := strings.TrimSpace(string(r.stdout))
		return &tools.Result{Text: fmt.Sprintf("Committed %s: %s\n%s", short(f[0]), f[1], stat),
			Structured: map[string]any{"commit": f[0], "subject": f[1]}}, nil
	},
}

// refuseNestedRepositories fails when staging paths would make a
// repository of its own below them a submodule of the workspace's (git
// add stages a nested repository as a gitlink). A submodule's git is run
// by the person's git status, outside any sandbox, with its own
// configuration: a repository a command made (and configured) must not
// become one through this tool. git lists an untracked nested repository
// as its directory, with a trailing slash, where it lists other
// untracked files one by one.
func (v *VCS) refuseNestedRepositories(ctx context.Context, paths []string) error {
	r, err := v.exec(ctx, append([]string{"ls-files", "--others", "--exclude-standard", "-z", "--"}, paths...)...)
	if err != nil {
		return err
	}
	if r.exit != 0 {
		return failed("git_commit (looking for nested repositories)", r)
	}
	var nested []string
	for _, p := range records(r.stdout, 0) {
		if strings.HasSuffix(p, "/") {
			nested = append(nested, strings.TrimSuffix(p, "/"))
		}
	}
	if len(nested) > 0 {
		return errdefs.New(errdefs.ErrDenied, "git_commit: %s is a git repository of its own; toold does not make it a submodule of the workspace's repository "+
			"(the person's git would then run what its configuration names). Leave it out of paths; a person adds submodules", strings.Join(nested, ", "))
	}
	return nil
}

// stage stages paths (changes, additions, deletions) as git add -A does,
// but the submodules among them by their commit only: git add looks for
// changes in a submodule's work tree by running git status there — with
// the submodule's own configuration (its filters, its textconv), which
// driverOverrides does not empty, and with the git directories writable.
// A submodule is left out of git add (pathspec magic) and its gitlink
// updated to the commit its HEAD names (or removed, when its directory is
// gone) by git update-index, which runs nothing in it.
func (v *VCS) stage(ctx context.Context, paths []string) error {
	ls, err := v.exec(ctx, append([]string{"ls-files", "--stage", "-z", "--"}, paths...)...)
	if err != nil {
		return err
	}
	if ls.exit != 0 {
		return failed("git_commit (staging the paths)", ls)
	}
	var gitlinks []string
	for _, rec := range records(ls.stdout, 0) {
		if meta, path, ok := strings.Cut(rec, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			gitlinks = append(gitlinks, path)
		}
	}
	if len(gitlinks) == 0 {
		r, err := v.runGit(ctx, append([]string{"add", "-A", "--"}, paths...)...)
		if err != nil {
			return err
		}
		if r.exit != 0 {
			return failed("git_commit (staging the paths)", r)
		}
		return nil
	}
	args := []string{"add", "-A", "--"}
	for _, p := range paths {
		args = append(args, ":(literal)"+p)
	}
	for _, g := range gitlinks {
		args = append(args, ":(exclude,literal)"+g)
	}
	r, err := v.runGitMagic(ctx, args...)
	if err != nil {
		return err
	}
	// Every path was a submodule: git add matched nothing else.
	if r.exit != 0 && !strings.Contains(string(r.stderr), "did not match any files") {
		return failed("git_commit (staging the paths)", r)
	}
	// --remove: a submodule whose directory is gone is staged as deleted,
	// as git add -A would.
	r, err = v.runGit(ctx, append([]string{"update-index", "--remove", "--"}, gitlinks...)...)
	if err != nil {
		return err
	}
	if r.exit != 0 {
		return failed("git_commit (staging the submodules)", r)
	}
	return nil
}
