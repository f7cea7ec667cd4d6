package service

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/tools"
)

// render returns the tools as the JSON array a provider's API takes. The
// output is deterministic for a given registry (object keys sorted), so an
// agent's prompt prefix stays byte-identical.
func render(infos []tools.Info, format pb.ToolFormat, flat, strict bool) (string, error) {
	if strict && format != pb.ToolFormat_TOOL_FORMAT_OPENAI {
		return "", status.Error(codes.InvalidArgument, "strict applies to TOOL_FORMAT_OPENAI only")
	}
	type fn struct {
		name, desc string
		schema     json.RawMessage
	}
	var fns []fn
	for _, in := range infos {
		fns = append(fns, fn{in.Spec.Name, in.Spec.Description, in.Schema})
		if flat && in.Spec.Consolidated() {
			for _, op := range in.Spec.Operations {
				fns = append(fns, fn{op.Name, op.Description, op.Schema})
			}
		}
	}
	out := make([]any, 0, len(fns))
	for _, f := range fns {
		switch format {
		case pb.ToolFormat_TOOL_FORMAT_OPENAI:
			fn := map[string]any{"name": f.name, "description": f.desc, "parameters": f.schema}
			if strict {
				schema, err := openAIStrictSchema(f.schema)
				if err != nil {
					return "", status.Error(codes.Internal, fmt.Sprintf("rendering %s for OpenAI strict mode failed", f.name))
				}
				fn["parameters"], fn["strict"] = schema, true
			}
			out = append(out, map[string]any{"type": "function", "function": fn})
		case pb.ToolFormat_TOOL_FORMAT_ANTHROPIC:
			out = append(out, map[string]any{"name": f.name, "description": f.desc, "input_schema": f.schema})
		case pb.ToolFormat_TOOL_FORMAT_GEMINI:
			// Gemini takes JSON Schema in parametersJsonSchema (its
			// "parameters" field accepts only an OpenAPI subset), but only
			// the keywords it documents.
			schema, err := geminiSchema(f.schema)
			if err != nil {
				return "", status.Error(codes.Internal, fmt.Sprintf("rendering %s for Gemini failed", f.name))
			}
			out = append(out, map[string]any{"name": f.name, "description": f.desc, "parametersJsonSchema": schema})
		case pb.ToolFormat_TOOL_FORMAT_MCP:
			out = append(out, map[string]any{"name": f.name, "description": f.desc, "inputSchema": f.schema})
		default:
			return "", status.Error(codes.InvalidArgument, fmt.Sprintf("unknown tool format %v", format))
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", status.Error(codes.Internal, "rendering tools failed")
	}
	return string(b), nil
}
