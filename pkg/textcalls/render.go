package textcalls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// function is one callable the prompt lists.
type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// functions lists the tools (and with flat, each operation of a
// consolidated tool by its own name) in registry order.
func functions(infos []tools.Info, flat bool) []function {
	var fns []function
	for _, in := range infos {
		fns = append(fns, function{in.Spec.Name, in.Spec.Description, in.Schema})
		if flat && in.Spec.Consolidated() {
			for _, op := range in.Spec.Operations {
				schema := op.Schema
				if len(schema) == 0 {
					schema = json.RawMessage(`{"type":"object"}`)
				}
				fns = append(fns, function{op.Name, op.Description, schema})
			}
		}
	}
	return fns
}

// compactJSON marshals v without HTML escaping, as the model cards show it.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// openAITool is {"type": "function", "function": {...}}, the form the
// Hermes/Qwen and Mistral templates embed.
func openAITool(f function) string {
	return compactJSON(struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", f})
}

// RenderPrompt returns the system-prompt block that tells a model of
// format f which tools it has and how to call them, in the words of that
// format's model card or chat template. The output is deterministic for a
// registry, so a prompt prefix stays cacheable. Auto is not a format to
// render: it is an INVALID_ARGUMENTS error, as is an unknown format.
func RenderPrompt(infos []tools.Info, f Format, flat bool) (string, error) {
	fns := functions(infos, flat)
	var b strings.Builder
	switch f {
	case Hermes:
		// Qwen2.5's chat template (Hermes-style function calling).
		b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n")
		b.WriteString("You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		for _, fn := range fns {
			b.WriteString("\n" + openAITool(fn))
		}
		b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n")
		b.WriteString("<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
	case Llama3:
		// Llama 3.1/3.2 model card, JSON based tool calling.
		b.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n")
		b.WriteString("Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}. Do not use variables.\n")
		for _, fn := range fns {
			b.WriteString("\n" + openAITool(fn) + "\n")
		}
	case Mistral:
		// Mistral's v3 tokenizer: [AVAILABLE_TOOLS] before the last user turn.
		tools := make([]json.RawMessage, len(fns))
		for i, fn := range fns {
			tools[i] = json.RawMessage(openAITool(fn))
		}
		b.WriteString("[AVAILABLE_TOOLS] " + compactJSON(tools) + "[/AVAILABLE_TOOLS]")
	case DeepSeek:
		// DeepSeek-V3.1's chat template.
		b.WriteString("## Tools\nYou have access to the following tools:\n")
		for _, fn := range fns {
			fmt.Fprintf(&b, "\n### %s\nDescription: %s\n\nParameters: %s\n", fn.Name, fn.Description, compactJSON(fn.Parameters))
		}
		b.WriteString("\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n")
		b.WriteString("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜>{{additional_tool_calls}}<｜tool▁calls▁end｜>\n\n")
		b.WriteString("Where:\n- `tool_call_name` must be an exact match to one of the available tools\n- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n- For multiple tool calls, chain them directly without separators or spaces")
	case ToolCode:
		// Gemma's function-calling guide: Python signatures, calls in
		// ```tool_code, results in ```tool_output.
		b.WriteString("At each turn, if you decide to invoke any of the function(s), it should be wrapped with ```tool_code```. ")
		b.WriteString("The python methods described below are imported and available, you can only use defined methods. ")
		b.WriteString("The generated code should be readable and efficient. ")
		b.WriteString("The response to a method will be wrapped in ```tool_output``` use it to call more tools or generate a helpful, friendly response.\n\n")
		b.WriteString("The following Python methods are available:\n\n```python\n")
		for i, fn := range fns {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(pythonSignature(fn))
		}
		b.WriteString("```")
	case JSON:
		b.WriteString("You have access to the functions below. To call one, answer with only a JSON object in a ```json block:\n")
		b.WriteString("```json\n{\"name\": \"<function-name>\", \"arguments\": {<argument-name>: <value>}}\n```\n\nFunctions:\n")
		for _, fn := range fns {
			b.WriteString(compactJSON(fn) + "\n")
		}
	case Legacy:
		b.WriteString("To use a tool, write a line of its own: TOOL_CALL: tool_name {\"argument\": \"value\"}\n\nTools:\n")
		for _, fn := range fns {
			fmt.Fprintf(&b, "- %s: %s Arguments (JSON Schema): %s\n", fn.Name, fn.Description, compactJSON(fn.Parameters))
		}
	case SWEAgent:
		// SWE-agent's commands, then toold's tools as NAME {json}.
		b.WriteString(sweAgentPrompt(fns))
	case Auto:
		return "", errdefs.New(errdefs.ErrInvalidArgument, "name the format to render the tool prompt for: one of %s", formatList())
	default:
		return "", errdefs.New(errdefs.ErrInvalidArgument, "unknown text tool-call format %q; use one of %s", f, formatList())
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

// pythonSignature renders a function as a Python def with a docstring, as
// Gemma's guide shows tools.
func pythonSignature(fn function) string {
	var schema struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(fn.Parameters, &schema)
	names := make([]string, 0, len(schema.Properties))
	for k := range schema.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	// Required parameters first, as Python requires.
	slices.SortStableFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(schema.Required, a), slices.Contains(schema.Required, b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return 0
	})
	var params, docs []string
	for _, n := range names {
		p := schema.Properties[n]
		typ := pyType(p.Type)
		if slices.Contains(schema.Required, n) {
			params = append(params, n+": "+typ)
		} else {
			params = append(params, n+": "+typ+" | None = None")
		}
		if p.Description != "" {
			docs = append(docs, "        "+n+": "+oneLine(p.Description))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "def %s(%s) -> dict:\n    \"\"\"%s", fn.Name, strings.Join(params, ", "), oneLine(fn.Description))
	if len(docs) > 0 {
		b.WriteString("\n\n    Args:\n" + strings.Join(docs, "\n") + "\n    ")
	}
	b.WriteString("\"\"\"\n")
	return b.String()
}

func pyType(t any) string {
	s, _ := t.(string)
	if l, ok := t.([]any); ok && len(l) > 0 {
		s, _ = l[0].(string)
	}
	switch s {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "array":
		return "list"
	case "object":
		return "dict"
	}
	return "object"
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, `"""`, `'''`)), " ")
}
