package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	pb "github.com/toold/toold/gen/toold/v1"
)

// completeTimeout bounds how long shell completion waits for toold: a
// completion that hangs is worse than none.
const completeTimeout = 2 * time.Second

// completeCall completes `toolctl call`'s arguments from the server, as
// kubectl completes resource names: the first is a tool name (each tool,
// its operations' flat names and its aliases, and tool.operation), the
// others are argument keys of that tool's schema ("path=", "limit="). With
// toold unreachable it offers nothing.
func (a *app) completeCall(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
	defer cancel()
	saved := a.connectTimeout
	a.connectTimeout = completeTimeout
	conn, err := a.connect(ctx)
	a.connectTimeout = saved
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer conn.Close()
	resp, err := pb.NewToolServiceClient(conn).ListTools(ctx, &pb.ListToolsRequest{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if len(args) == 0 {
		return toolNames(resp.GetTools()), cobra.ShellCompDirectiveNoFileComp
	}
	if strings.ContainsAny(toComplete, "=") {
		return nil, cobra.ShellCompDirectiveDefault // a value: files, say
	}
	var keys []string
	for _, k := range argumentKeys(resp.GetTools(), args[0]) {
		if !slices.ContainsFunc(args[1:], func(a string) bool { return strings.HasPrefix(a, k+"=") || strings.HasPrefix(a, k+":=") }) {
			keys = append(keys, k+"=")
		}
	}
	return keys, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// toolNames are the names a call may use, in ListTools order.
func toolNames(tools []*pb.ToolSpec) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.GetName())
		for _, op := range t.GetOperations() {
			out = append(out, op.GetName(), t.GetName()+"."+op.GetName())
		}
		out = append(out, t.GetAliases()...)
	}
	return out
}

// argumentKeys are the properties of the schema of the tool or operation
// name means, sorted; for a consolidated tool called by its own name they
// include "operation".
func argumentKeys(tools []*pb.ToolSpec, name string) []string {
	tool, opName, dotted := strings.Cut(name, ".")
	for _, t := range tools {
		for _, op := range t.GetOperations() {
			if (dotted && tool == t.GetName() && opName == op.GetName()) || (!dotted && name == op.GetName()) {
				return schemaKeys(op.GetInputSchema())
			}
		}
		if name == t.GetName() || slices.Contains(t.GetAliases(), name) {
			return schemaKeys(t.GetInputSchema())
		}
	}
	return nil
}

// schemaKeys returns the property names of a JSON Schema object, sorted.
func schemaKeys(schema string) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil {
		return nil
	}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
