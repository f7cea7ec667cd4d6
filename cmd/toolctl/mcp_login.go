package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	pb "github.com/toold/toold/gen/toold/v1"
)

// loginPoll is how often 'toolctl mcp login' asks toold for the server's
// state.
const loginPoll = 250 * time.Millisecond

func (a *app) newMCPLoginCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Print the OAuth authorization URL of an MCP server and wait until it is authorized",
		Long: `An HTTP MCP server that answers 401 with an OAuth challenge needs a person
to authorize toold once. toold runs the authorization-code flow (PKCE; a
client ID metadata document, the entry's oauth.clientId, or dynamic
registration) and waits for the browser's redirect on a loopback port of
127.0.0.1. 'toolctl mcp login NAME' prints the URL to open and waits until the
server connects (exit 0), the authorization is denied or fails (exit 1), or
--timeout passes. The browser must run where 127.0.0.1 is toold's host
(forward the port otherwise, e.g. ssh -L).

toold keeps the token in its state directory (a 0600 file commands cannot
read) and refreshes it; a restart does not ask again.`,
		Example: `  toolctl mcp login linear`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return a.runMCPLogin(ctx, args[0])
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up waiting after this long")
	return cmd
}

func (a *app) runMCPLogin(ctx context.Context, name string) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	admin := pb.NewAdminServiceClient(conn)
	shown, asked := "", false
	for {
		resp, err := admin.ListMcpServers(ctx, &pb.ListMcpServersRequest{})
		if err != nil {
			if ctx.Err() != nil {
				return &exitError{code: exitFailure, err: fmt.Errorf("%s: not authorized yet (gave up waiting)", name)}
			}
			return a.rpcError("list MCP servers", err)
		}
		var st *pb.McpServerStatus
		for _, s := range resp.GetServers() {
			if s.GetName() == name {
				st = s
			}
		}
		if st == nil {
			return &exitError{code: exitFailure, err: fmt.Errorf("no MCP server %s ('toolctl mcp list' shows them)", name)}
		}
		switch st.GetState() {
		case pb.McpServerState_MCP_SERVER_STATE_CONNECTED:
			if asked && st.GetError() != "" {
				// The session stayed up; its authorization failed.
				return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", name, firstLineOf(st.GetError()))}
			}
			if asked {
				fmt.Fprintf(a.stdout, "%s: authorized; %s\n", name, stateSummary(st))
			} else {
				fmt.Fprintf(a.stdout, "%s: %s (no authorization needed)\n", name, stateSummary(st))
			}
			return nil
		case pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING:
			if u := st.GetAuthorizationUrl(); u != shown {
				fmt.Fprintf(a.stdout, "Open this URL in a browser to authorize toold with %s:\n\n  %s\n\nWaiting for the authorization...\n", name, u)
				shown, asked = u, true
			}
		case pb.McpServerState_MCP_SERVER_STATE_BACKOFF:
			// An authorization that failed (denied, not completed, refused
			// by the authorization server: toold's messages say
			// "authoriz...") ends the wait; another failure of a connection
			// after the person authorized is retried by toold with the
			// token it got, so login waits for that.
			if asked && strings.Contains(st.GetError(), "authoriz") {
				return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", name, firstLineOf(st.GetError()))}
			}
		case pb.McpServerState_MCP_SERVER_STATE_DISABLED, pb.McpServerState_MCP_SERVER_STATE_STOPPED:
			return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s", name, stateSummary(st))}
		}
		select {
		case <-ctx.Done():
			return &exitError{code: exitFailure, err: fmt.Errorf("%s: not authorized yet (gave up waiting): %s", name, stateSummary(st))}
		case <-time.After(loginPoll):
		}
	}
}
