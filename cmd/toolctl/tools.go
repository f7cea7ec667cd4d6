package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/toold/toold/pkg/service/mcppb"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toold/toold/gen/toold/v1"
)

// toolFormats maps --format values to the rendering ListTools produces.
var toolFormats = map[string]pb.ToolFormat{
	"openai":    pb.ToolFormat_TOOL_FORMAT_OPENAI,
	"anthropic": pb.ToolFormat_TOOL_FORMAT_ANTHROPIC,
	"gemini":    pb.ToolFormat_TOOL_FORMAT_GEMINI,
	"mcp":       pb.ToolFormat_TOOL_FORMAT_MCP,
}

type toolsOptions struct {
	json    bool
	format  string
	flat    bool
	dialect string
}

func (a *app) newToolsCmd() *cobra.Command {
	var o toolsOptions
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools toold offers, with their risk and operations",
		Long: `List the tools toold offers, in toold's stable order, with their risk,
source and operations.

--json prints the ListToolsResponse as protojson. --format prints the tools
rendered for a model provider, as the JSON array its API takes; --flat adds
each operation of a consolidated tool as its own tool to that rendering.

--dialect lists another agent's tool set as its model knows it, run by
toold's tools: claude-code, gemini-cli, codex, openhands or swe-agent
(toold: toold's own). The source column says which toold tool runs each;
the agent's tools toold has no counterpart for are named on stderr.`,
		Example: `  toolctl tools
  toolctl tools --format openai --flat > tools.json
  toolctl tools --dialect claude-code --format anthropic > claude-tools.json
  toolctl tools --json | jq '.tools[].name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runTools(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print the ListToolsResponse as protojson")
	f.StringVar(&o.format, "format", "", "print the tools rendered for openai, anthropic, gemini or mcp")
	f.BoolVar(&o.flat, "flat", false, "with --format: also render each operation as its own tool")
	f.StringVar(&o.dialect, "dialect", "", "list another agent's tools: claude-code, gemini-cli, codex, openhands or swe-agent")
	return cmd
}

func (a *app) runTools(ctx context.Context, o toolsOptions) error {
	req := &pb.ListToolsRequest{FlatOperations: o.flat, Dialect: o.dialect}
	if o.format != "" {
		f, ok := toolFormats[strings.ToLower(o.format)]
		if !ok {
			return usageError("--format %q: want openai, anthropic, gemini or mcp", o.format)
		}
		req.Format = f
	} else if o.flat {
		return usageError("--flat needs --format: it changes only the rendering for a provider")
	}
	mode := a.outputMode(o.json)

	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewToolServiceClient(conn).ListTools(ctx, req)
	if err != nil {
		return a.rpcError("list tools", err)
	}

	switch {
	case mode == modeJSON:
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	case req.Format != pb.ToolFormat_TOOL_FORMAT_UNSPECIFIED:
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(resp.GetRenderedJson()), "", "  "); err != nil {
			// Not JSON after all: print what toold sent.
			buf.Reset()
			buf.WriteString(resp.GetRenderedJson())
		}
		buf.WriteByte('\n')
		_, err := a.stdout.Write(buf.Bytes())
		return err
	}
	width := 0
	if mode == modeHuman && a.isTerminal(a.stdout) {
		width = a.terminalWidth(a.stdout)
	}
	if err := writeToolTable(a.stdout, resp.GetTools(), width); err != nil {
		return err
	}
	// Tools toold knows but cannot offer here (terminal_operations without
	// a shell) go to stderr, so stdout stays the table of what works.
	if v := resp.GetDialectVersion(); v != "" {
		fmt.Fprintf(a.stderr, "dialect %s, following %s\n", resp.GetDialect(), v)
	}
	for _, u := range resp.GetUnavailable() {
		fmt.Fprintf(a.stderr, "not available: %s: %s\n", u.GetName(), u.GetReason())
	}
	return nil
}

// writeToolTable prints one row per tool and an indented row per operation
// of a consolidated tool. Descriptions are cut to their first sentence and,
// when width > 0, to fit in width columns.
func writeToolTable(w io.Writer, tools []*pb.ToolSpec, width int) error {
	type row struct{ name, risk, source, desc string }
	rows := []row{{"NAME", "RISK", "SOURCE", "DESCRIPTION"}}
	for _, t := range tools {
		desc := firstSentence(t.GetDescription())
		if len(t.GetAliases()) > 0 {
			desc += " (aliases: " + strings.Join(t.GetAliases(), ", ") + ")"
		}
		rows = append(rows, row{t.GetName(), riskName(t.GetRisk()), t.GetSource(), desc})
		for _, op := range t.GetOperations() {
			rows = append(rows, row{"  " + op.GetName(), riskName(op.GetRisk()), "", firstSentence(op.GetDescription())})
		}
	}
	var wName, wRisk, wSource int
	for _, r := range rows {
		wName = max(wName, utf8.RuneCountInString(r.name))
		wRisk = max(wRisk, utf8.RuneCountInString(r.risk))
		wSource = max(wSource, utf8.RuneCountInString(r.source))
	}
	var b strings.Builder
	for _, r := range rows {
		line := fmt.Sprintf("%-*s  %-*s  %-*s  ", wName, r.name, wRisk, r.risk, wSource, r.source)
		desc := r.desc
		if width > 0 {
			// Stay short of the last column so the terminal does not wrap.
			desc = truncate(desc, max(width-utf8.RuneCountInString(line)-1, 10))
		}
		line += desc
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// riskName is "low", "medium", "high" or "unknown".
func riskName(r pb.RiskLevel) string {
	if n := mcppb.RiskName(r); n != "" {
		return n
	}
	return "unknown"
}

// firstSentence returns s up to the end of its first sentence or line.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	for i := 0; ; {
		j := strings.Index(s[i:], ". ")
		if j < 0 {
			return s
		}
		i += j + 1
		if !strings.HasSuffix(s[:i], "e.g.") && !strings.HasSuffix(s[:i], "i.e.") {
			return s[:i]
		}
	}
}

// truncate shortens s to at most n runes, ending in "…" when cut; n <= 0
// means no limit.
func truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
