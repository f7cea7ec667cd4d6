package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

// textFormats maps --format values to the text tool-call formats.
var textFormats = map[string]pb.TextCallFormat{
	"auto":      pb.TextCallFormat_TEXT_CALL_FORMAT_UNSPECIFIED,
	"hermes":    pb.TextCallFormat_TEXT_CALL_FORMAT_HERMES,
	"qwen":      pb.TextCallFormat_TEXT_CALL_FORMAT_HERMES,
	"llama3":    pb.TextCallFormat_TEXT_CALL_FORMAT_LLAMA3,
	"mistral":   pb.TextCallFormat_TEXT_CALL_FORMAT_MISTRAL,
	"deepseek":  pb.TextCallFormat_TEXT_CALL_FORMAT_DEEPSEEK,
	"tool_code": pb.TextCallFormat_TEXT_CALL_FORMAT_TOOL_CODE,
	"gemma":     pb.TextCallFormat_TEXT_CALL_FORMAT_TOOL_CODE,
	"json":      pb.TextCallFormat_TEXT_CALL_FORMAT_JSON,
	"legacy":    pb.TextCallFormat_TEXT_CALL_FORMAT_LEGACY,
	"swe-agent": pb.TextCallFormat_TEXT_CALL_FORMAT_SWE_AGENT,
}

const textFormatNames = "hermes (qwen), llama3, mistral, deepseek, tool_code (gemma), json, legacy, swe-agent"

func textFormat(s string) (pb.TextCallFormat, error) {
	f, ok := textFormats[strings.ToLower(s)]
	if !ok {
		return 0, usageError("--format %q: want auto, %s", s, textFormatNames)
	}
	return f, nil
}

type parseOptions struct {
	format string
	json   bool
}

func (a *app) newParseCmd() *cobra.Command {
	var o parseOptions
	cmd := &cobra.Command{
		Use:   "parse [FILE]",
		Short: "Find the tool calls a model wrote as text, and check them",
		Long: `Read a model's output (from FILE, or stdin when FILE is "-" or absent) and
print the tool calls in it, each as toold would run it: the resolved tool and
operation, the arguments after repair and coercion, every repair, or the error
the call would end with. Nothing is executed. The text left for the person
goes to stderr.

Formats: ` + textFormatNames + `; auto (the default) detects it.
The exit status is 1 when a call would fail.`,
		Example: `  ollama run qwen2.5 "list the files" | toolctl parse
  toolctl parse --format llama3 reply.txt
  toolctl parse --json reply.txt | jq '.calls[].tool'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runParse(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "auto", "the format the model writes: auto, "+textFormatNames)
	f.BoolVar(&o.json, "json", false, "print the ParseToolCallsResponse as protojson")
	return cmd
}

func (a *app) readInput(args []string) (string, error) {
	var r io.Reader = a.stdin
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return "", usageError("%v", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return "", &exitError{code: exitFailure, err: err}
	}
	return string(b), nil
}

func (a *app) runParse(ctx context.Context, o parseOptions, args []string) error {
	format, err := textFormat(o.format)
	if err != nil {
		return err
	}
	text, err := a.readInput(args)
	if err != nil {
		return err
	}
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewTextCallServiceClient(conn).ParseToolCalls(ctx, &pb.ParseToolCallsRequest{Text: text, Format: format})
	if err != nil {
		return a.rpcError("parse tool calls", err)
	}
	failed := false
	for _, c := range resp.GetCalls() {
		failed = failed || c.GetError() != nil
	}
	if a.outputMode(o.json) == modeJSON {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		if _, err := fmt.Fprintf(a.stdout, "%s\n", b); err != nil {
			return err
		}
	} else {
		writeParsed(a.stdout, resp)
		if t := resp.GetRemainingText(); t != "" {
			fmt.Fprintf(a.stderr, "text: %s\n", t)
		}
	}
	if failed {
		return &exitError{code: exitFailure}
	}
	return nil
}

// writeParsed prints one block per call: what the model wrote, what toold
// makes of it, and the repairs or the error.
func writeParsed(w io.Writer, resp *pb.ParseToolCallsResponse) {
	if len(resp.GetCalls()) == 0 {
		fmt.Fprintln(w, "no tool calls")
		return
	}
	format := strings.ToLower(strings.TrimPrefix(resp.GetFormat().String(), "TEXT_CALL_FORMAT_"))
	for i, c := range resp.GetCalls() {
		fmt.Fprintf(w, "call %d (%s): %s %s\n", i+1, format, c.GetName(), c.GetArgumentsJson())
		if c.GetTool() != "" {
			target := c.GetTool()
			if c.GetOperation() != c.GetTool() {
				target += "." + c.GetOperation()
			}
			fmt.Fprintf(w, "  runs:  %s %s\n", target, c.GetResolvedArgumentsJson())
		}
		for _, co := range c.GetCoercions() {
			field := co.GetField()
			if field == "" {
				field = "arguments"
			}
			if co.GetTo() != "" {
				fmt.Fprintf(w, "  fixed: %s %s -> %s (%s)\n", field, co.GetFrom(), co.GetTo(), co.GetRule())
			} else {
				fmt.Fprintf(w, "  fixed: %s %s (%s)\n", field, co.GetFrom(), co.GetRule())
			}
		}
		if e := c.GetError(); e != nil {
			fmt.Fprintf(w, "  error: %s: %s\n", e.GetCode(), e.GetMessage())
		}
	}
}
