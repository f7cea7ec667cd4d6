package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	pb "github.com/toold/toold/gen/toold/v1"
)

type promptOptions struct {
	format string
	flat   bool
}

func (a *app) newPromptCmd() *cobra.Command {
	var o promptOptions
	cmd := &cobra.Command{
		Use:   "prompt --format FORMAT",
		Short: "Print the tool list as the system-prompt block of a text tool-call format",
		Long: `Print toold's tools as the system-prompt block that models without native tool
calling are trained on, in the words of the format's model card or chat
template: ` + textFormatNames + `. Send the model's reply to
'toolctl parse' (or the ParseToolCalls RPC) to get the calls back.

--flat also lists each operation of a consolidated tool as its own function.`,
		Example: `  toolctl prompt --format hermes > system.txt
  toolctl prompt --format llama3 --flat`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runPrompt(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "", "the model's format: "+textFormatNames)
	f.BoolVar(&o.flat, "flat", false, "also list each operation as its own function")
	return cmd
}

func (a *app) runPrompt(ctx context.Context, o promptOptions) error {
	if o.format == "" || o.format == "auto" {
		return usageError("--format is required: one of %s", textFormatNames)
	}
	format, err := textFormat(o.format)
	if err != nil {
		return err
	}
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewTextCallServiceClient(conn).RenderToolPrompt(ctx, &pb.RenderToolPromptRequest{Format: format, Flat: o.flat})
	if err != nil {
		return a.rpcError("render tool prompt", err)
	}
	_, err = io.WriteString(a.stdout, resp.GetPrompt())
	return err
}
