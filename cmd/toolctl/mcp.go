package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config/value"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/service/mcppb"
)

func (a *app) newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List, add and remove the MCP servers whose tools toold offers",
		Long: `toold registers the tools of external MCP servers as SERVER__TOOL (and
SERVER.TOOL resolves too). Servers come from toold's configuration
("mcpServers", as Claude Desktop and Cursor write it) or are added at runtime
with 'toolctl mcp add'; added servers last until toold stops.

Adding and removing servers is allowed over the unix socket, and over TCP
only when toold runs with a token.`,
	}
	cmd.AddCommand(a.newMCPListCmd(), a.newMCPAddCmd(), a.newMCPRemoveCmd(), a.newMCPLoginCmd())
	return cmd
}

func (a *app) newMCPListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the MCP servers, their state and tools",
		Example: `  toolctl mcp list
  toolctl mcp list --json | jq '.servers[] | {name, state, tools}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			resp, err := pb.NewAdminServiceClient(conn).ListMcpServers(cmd.Context(), &pb.ListMcpServersRequest{})
			if err != nil {
				return a.rpcError("list MCP servers", err)
			}
			if a.outputMode(asJSON) == modeJSON {
				return writeProtoJSON(a.stdout, resp)
			}
			return writeMCPTable(a.stdout, resp.GetServers())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the ListMcpServersResponse as protojson")
	return cmd
}

type mcpAddOptions struct {
	env, headers []string
	cwd, typ     string
	risk         string
	idle         time.Duration
	entry        string
	asJSON       bool
}

func (a *app) newMCPAddCmd() *cobra.Command {
	var o mcpAddOptions
	cmd := &cobra.Command{
		Use:   "add NAME [flags] (-- COMMAND [ARGS...] | URL)",
		Short: "Start an MCP server and register its tools",
		Long: `Start an MCP server and register its tools as NAME__TOOL. Give a command
(after --) for a stdio server, or the URL of an HTTP server (streamable HTTP;
--type sse for the older HTTP+SSE transport, inferred when the path ends in
/sse). --json takes one "mcpServers" entry as JSON instead.

It waits for the first connection attempt and prints the server's state and
tools. It exits 0 when the server connected, 1 when it was added but has not
connected (toold keeps retrying; 'toolctl mcp remove NAME' stops it).`,
		Example: `  toolctl mcp add everything -- npx -y @modelcontextprotocol/server-everything
  toolctl mcp add files --risk high -- npx -y @modelcontextprotocol/server-filesystem /tmp/share
  toolctl mcp add docs https://example.com/mcp --header 'Authorization: Bearer ${DOCS_TOKEN}'
  toolctl mcp add gh --json '{"command":"docker","args":["run","-i","--rm","ghcr.io/github/github-mcp-server"]}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := o.request(args[0], args[1:], cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return a.runMCPAdd(cmd.Context(), req, o.asJSON)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.env, "env", "e", nil, "KEY=VALUE for a stdio server's environment (repeatable)")
	f.StringVar(&o.cwd, "cwd", "", "working directory of a stdio server")
	f.StringArrayVarP(&o.headers, "header", "H", nil, "'Name: value' sent to an HTTP server (repeatable)")
	f.StringVar(&o.typ, "type", "", "stdio, http or sse (default: inferred)")
	f.StringVar(&o.risk, "risk", "", "low, medium or high for every tool of the server, instead of the server's hints")
	f.DurationVar(&o.idle, "idle-timeout", 0, "end a call when the server sends no progress or result for this long (default 60s)")
	f.StringVar(&o.entry, "json", "", "the whole entry as JSON, as in \"mcpServers\"")
	f.BoolVar(&o.asJSON, "output-json", false, "print the AddMcpServerResponse as protojson")
	return cmd
}

// request builds the AddMcpServerRequest from the command line. dash is
// the index of the first argument after "--" among rest's parent args, or
// -1.
func (o mcpAddOptions) request(name string, rest []string, dash int) (*pb.AddMcpServerRequest, error) {
	var entry mcpconfig.Server
	switch {
	case o.entry != "":
		if len(rest) > 0 {
			return nil, usageError("--json gives the whole entry: no command or URL after it")
		}
		if err := json.Unmarshal([]byte(o.entry), &entry); err != nil {
			return nil, usageError("--json: %v", err)
		}
	case len(rest) == 0:
		return nil, usageError("give a command after -- (stdio server) or a URL (HTTP server), e.g. toolctl mcp add %s -- npx -y @modelcontextprotocol/server-everything", name)
	case dash < 0 && len(rest) == 1 && (strings.HasPrefix(rest[0], "http://") || strings.HasPrefix(rest[0], "https://")):
		entry.URL = rest[0]
	case dash < 0:
		return nil, usageError("put the server's command after --, so its flags are not taken for toolctl's: toolctl mcp add %s -- %s", name, strings.Join(rest, " "))
	default:
		entry.Command, entry.Args = rest[0], rest[1:]
	}
	for _, kv := range o.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--env %q: want KEY=VALUE", kv)
		}
		if entry.Env == nil {
			entry.Env = map[string]string{}
		}
		entry.Env[k] = v
	}
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageError("--header %q: want 'Name: value'", h)
		}
		if entry.Headers == nil {
			entry.Headers = map[string]string{}
		}
		entry.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if o.cwd != "" {
		entry.Cwd = o.cwd
	}
	if o.typ != "" {
		entry.Type = o.typ
	}
	if o.risk != "" {
		r, err := mcpconfig.ParseRisk(o.risk)
		if err != nil {
			return nil, usageError("--risk: %v", err)
		}
		entry.Toold.Risk = r
	}
	if o.idle > 0 {
		entry.Toold.IdleTimeout = value.Duration(o.idle)
	}
	if err := entry.Validate(name); err != nil {
		return nil, usageError("%v", err)
	}
	return &pb.AddMcpServerRequest{Name: name, Config: mcppb.ConfigToPB(entry)}, nil
}

func (a *app) runMCPAdd(ctx context.Context, req *pb.AddMcpServerRequest, asJSON bool) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := pb.NewAdminServiceClient(conn).AddMcpServer(ctx, req)
	if err != nil {
		return a.rpcError("add MCP server "+req.GetName(), err)
	}
	st := resp.GetServer()
	if asJSON {
		if err := writeProtoJSON(a.stdout, resp); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "%s: %s\n", st.GetName(), stateSummary(st))
		if len(st.GetTools()) > 0 {
			fmt.Fprintf(a.stdout, "tools: %s\n", strings.Join(st.GetTools(), ", "))
		}
		for _, r := range st.GetRefused() {
			fmt.Fprintf(a.stdout, "refused: %s: %s\n", r.GetName(), r.GetReason())
		}
	}
	if st.GetState() == pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s was added and needs OAuth authorization: open the URL above in a browser, or run 'toolctl mcp login %s', which waits for it", st.GetName(), st.GetName())}
	}
	if st.GetState() != pb.McpServerState_MCP_SERVER_STATE_CONNECTED {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s was added but is not connected; toold keeps retrying ('toolctl mcp remove %s' stops it)", st.GetName(), st.GetName())}
	}
	return nil
}

func (a *app) newMCPRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm"},
		Short:   "Stop an MCP server and remove its tools",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			if _, err := pb.NewAdminServiceClient(conn).RemoveMcpServer(cmd.Context(), &pb.RemoveMcpServerRequest{Name: args[0]}); err != nil {
				if status.Code(err) == codes.NotFound {
					// toold answered: there is no such server. That is
					// the command failing (1), not usage or connection (2).
					return &exitError{code: exitFailure, err: fmt.Errorf("remove MCP server %s: %s", args[0], status.Convert(err).Message())}
				}
				return a.rpcError("remove MCP server "+args[0], err)
			}
			fmt.Fprintf(a.stdout, "%s removed\n", args[0])
			return nil
		},
	}
}

// stateSummary says in one line where a server is.
func stateSummary(st *pb.McpServerStatus) string {
	state := strings.ToLower(strings.TrimPrefix(st.GetState().String(), "MCP_SERVER_STATE_"))
	switch st.GetState() {
	case pb.McpServerState_MCP_SERVER_STATE_CONNECTED:
		s := fmt.Sprintf("connected, %d tools", len(st.GetTools()))
		if st.GetServerName() != "" {
			s += fmt.Sprintf(" (%s %s, MCP %s)", st.GetServerName(), st.GetServerVersion(), st.GetProtocolVersion())
		}
		return s
	case pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING:
		return "needs authorization: open " + st.GetAuthorizationUrl() + " (or run toolctl mcp login " + st.GetName() + ")"
	case pb.McpServerState_MCP_SERVER_STATE_BACKOFF:
		s := "down: " + firstLineOf(st.GetError())
		if t := st.GetNextAttempt(); t != nil {
			s += fmt.Sprintf(" (retry in %s)", max(time.Until(t.AsTime()).Round(time.Second), 0))
		}
		return s
	}
	return state
}

// writeMCPTable prints one row per server.
func writeMCPTable(w io.Writer, servers []*pb.McpServerStatus) error {
	if len(servers) == 0 {
		_, err := fmt.Fprintln(w, "no MCP servers (add one with 'toolctl mcp add NAME -- COMMAND' or in toold's config)")
		return err
	}
	rows := [][4]string{{"NAME", "TRANSPORT", "TOOLS", "STATE"}}
	for _, s := range servers {
		rows = append(rows, [4]string{s.GetName(), s.GetTransport(), fmt.Sprint(len(s.GetTools())), stateSummary(s)})
	}
	var widths [3]int
	for _, r := range rows {
		for i := range widths {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %-*s  %*s  %s\n", widths[0], r[0], widths[1], r[1], widths[2], r[2], r[3])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return truncate(s, 160)
}

func writeProtoJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
