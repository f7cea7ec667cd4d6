package service

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/textcalls"
	"github.com/toold/toold/pkg/tools"
)

// TextCallServer implements the TextCallService over a registry: parsing
// and checking text tool calls, and rendering the tool prompt. It runs and
// asks nothing, so it needs no executor.
type TextCallServer struct {
	pb.UnimplementedTextCallServiceServer
	reg *tools.Registry
}

var _ pb.TextCallServiceServer = (*TextCallServer)(nil)

// NewTextCallServer returns the TextCallService of reg.
func NewTextCallServer(reg *tools.Registry) *TextCallServer { return &TextCallServer{reg: reg} }

var textFormats = map[pb.TextCallFormat]textcalls.Format{
	pb.TextCallFormat_TEXT_CALL_FORMAT_UNSPECIFIED: textcalls.Auto,
	pb.TextCallFormat_TEXT_CALL_FORMAT_HERMES:      textcalls.Hermes,
	pb.TextCallFormat_TEXT_CALL_FORMAT_LLAMA3:      textcalls.Llama3,
	pb.TextCallFormat_TEXT_CALL_FORMAT_MISTRAL:     textcalls.Mistral,
	pb.TextCallFormat_TEXT_CALL_FORMAT_DEEPSEEK:    textcalls.DeepSeek,
	pb.TextCallFormat_TEXT_CALL_FORMAT_TOOL_CODE:   textcalls.ToolCode,
	pb.TextCallFormat_TEXT_CALL_FORMAT_JSON:        textcalls.JSON,
	pb.TextCallFormat_TEXT_CALL_FORMAT_LEGACY:      textcalls.Legacy,
	pb.TextCallFormat_TEXT_CALL_FORMAT_SWE_AGENT:   textcalls.SWEAgent,
}

func textFormatToPB(f textcalls.Format) pb.TextCallFormat {
	for k, v := range textFormats {
		if v == f {
			return k
		}
	}
	return pb.TextCallFormat_TEXT_CALL_FORMAT_UNSPECIFIED
}

// ParseToolCalls implements pb.TextCallServiceServer.
func (s *TextCallServer) ParseToolCalls(ctx context.Context, req *pb.ParseToolCallsRequest) (*pb.ParseToolCallsResponse, error) {
	f, ok := textFormats[req.GetFormat()]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown text call format %v", req.GetFormat())
	}
	res, err := textcalls.Parse(req.GetText(), f)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	out := &pb.ParseToolCallsResponse{RemainingText: res.Text, Format: textFormatToPB(res.Format)}
	for _, c := range res.Calls {
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		chk := textcalls.Check(s.reg, c)
		pc := &pb.ParsedToolCall{
			Name: c.Name, ArgumentsJson: c.Arguments, Raw: c.Raw, Start: int32(c.Start), End: int32(c.End),
			Tool: chk.Tool, Operation: chk.Operation, ResolvedArgumentsJson: chk.Arguments,
		}
		for _, co := range chk.Coercions {
			pc.Coercions = append(pc.Coercions, &pb.Coercion{Field: co.Field, From: co.From, To: co.To, Rule: co.Rule})
		}
		if chk.Err != nil {
			pc.Error = toolErrorToPB(chk.Err)
		}
		out.Calls = append(out.Calls, pc)
	}
	return out, nil
}

// RenderToolPrompt implements pb.TextCallServiceServer.
func (s *TextCallServer) RenderToolPrompt(_ context.Context, req *pb.RenderToolPromptRequest) (*pb.RenderToolPromptResponse, error) {
	f, ok := textFormats[req.GetFormat()]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown text call format %v", req.GetFormat())
	}
	prompt, err := textcalls.RenderPrompt(s.reg.List(), f, req.GetFlat())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.RenderToolPromptResponse{Prompt: prompt}, nil
}
