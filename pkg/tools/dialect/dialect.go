// Package dialect defines the tool sets of other agents — Claude Code,
// gemini-cli, codex, OpenHands and SWE-agent — as tools.Dialects: each
// agent's tool names, parameters, units and result shapes as its model was
// trained on them, mapped onto toold's tools. A daemon registers All() with
// tools.Registry.RegisterDialect; ListTools and `toold mcp --dialect`
// present one; calls in it run through toold's whole pipeline.
//
// Each dialect records the published definition it follows (Version). The
// descriptions are short paraphrases of the agents' own; names, parameter
// names, types and units are theirs exactly.
package dialect

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// All returns every dialect, in the order a call made without a dialect is
// matched against them.
func All() []tools.Dialect {
	return []tools.Dialect{ClaudeCode(), GeminiCLI(), Codex(), OpenHands(), SWEAgent()}
}

// Names returns the dialect names ListTools accepts, "toold" (toold's own
// tools) first.
func Names() []string {
	out := []string{"toold"}
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}

// mapper is one step of a tool's argument mapping.
type mapper func(args map[string]any) ([]tools.Coercion, error)

// steps runs mappers in order, collecting their coercions.
func steps(ms ...mapper) func(map[string]any) ([]tools.Coercion, error) {
	return func(args map[string]any) ([]tools.Coercion, error) {
		var out []tools.Coercion
		for _, m := range ms {
			cs, err := m(args)
			out = append(out, cs...)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func invalid(field, format string, a ...any) error {
	return errdefs.Invalid("/"+field, "dialect", format, a...)
}

// rename moves argument from to to ("file_path" → "path"). Both present is
// an error: the model said two things.
func rename(from, to string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		v, ok := args[from]
		if !ok {
			return nil, nil
		}
		if _, both := args[to]; both && from != to {
			return nil, invalid(from, "give %q or %q, not both", from, to)
		}
		delete(args, from)
		args[to] = v
		return []tools.Coercion{{Field: "/" + from, From: js(v), To: js(v), Rule: fmt.Sprintf("%q is toold's %q", from, to)}}, nil
	}
}

// drop removes an argument toold has no use for, saying why.
func drop(key, why string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		v, ok := args[key]
		if !ok {
			return nil, nil
		}
		delete(args, key)
		return []tools.Coercion{{Field: "/" + key, From: js(v), Rule: why}}, nil
	}
}

// dropIf removes key when its value is one of the harmless values (a flag at
// its default), and otherwise refuses the call with msg: toold cannot do
// what it asks.
func dropIf(key string, harmless []any, msg string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		v, ok := args[key]
		if !ok {
			return nil, nil
		}
		for _, h := range harmless {
			if fmt.Sprint(h) == fmt.Sprint(v) {
				delete(args, key)
				return []tools.Coercion{{Field: "/" + key, From: js(v), Rule: "at its default; removed"}}, nil
			}
		}
		return nil, invalid(key, "%s", msg)
	}
}

// set adds a constant argument toold's operation needs.
func set(key string, v any, why string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		args[key] = v
		return []tools.Coercion{{Field: "/" + key, To: js(v), Rule: why}}, nil
	}
}

// number reads a JSON number (or a numeric string) argument.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// msToSeconds moves a millisecond argument to toold's seconds argument to.
func msToSeconds(from, to string) mapper {
	return func(args map[string]any) ([]tools.Coercion, error) {
		v, ok := args[from]
		if !ok {
			return nil, nil
		}
		ms, ok := number(v)
		if !ok || ms <= 0 {
			return nil, invalid(from, "%q is a number of milliseconds greater than 0, got %s", from, js(v))
		}
		delete(args, from)
		s := ms / 1000
		args[to] = json.Number(strconv.FormatFloat(s, 'f', -1, 64))
		return []tools.Coercion{{Field: "/" + from, From: js(v), To: js(args[to]), Rule: fmt.Sprintf("milliseconds to toold's %q in seconds", to)}}, nil
	}
}

// boolOf reads a boolean argument, also as the strings models send.
func boolOf(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// commandOutput splits run_command's result text into the command's output
// (without toold's status line and hint) and reads its exit code, signal
// and duration from the structured result.
func commandOutput(res *tools.Result) (out string, exit int, signal string, seconds float64, ok bool) {
	if res == nil || res.Structured == nil {
		return "", 0, "", 0, false
	}
	code, has := res.Structured["exit_code"]
	if !has {
		return "", 0, "", 0, false
	}
	c, _ := number(toNumber(code))
	exit = int(c)
	signal, _ = res.Structured["signal"].(string)
	if ms, ok := number(toNumber(res.Structured["duration_ms"])); ok {
		seconds = float64(int(ms/100+0.5)) / 10
	}
	text := res.Text
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if text == "(no output)\n" {
		text = ""
	}
	if i := strings.LastIndex(text, "hint: "); i >= 0 && (i == 0 || text[i-1] == '\n') {
		text = text[:i]
	}
	return text, exit, signal, seconds, true
}

func toNumber(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

// withText returns a copy of res with its text replaced.
func withText(res *tools.Result, text string) *tools.Result {
	cp := *res
	cp.Text = text
	return &cp
}

// schema compacts a JSON Schema literal; a bad literal is a bug caught by
// the package's tests.
func schema(s string) json.RawMessage {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("dialect schema: " + err.Error() + ": " + s)
	}
	b, _ := json.Marshal(v)
	return b
}
