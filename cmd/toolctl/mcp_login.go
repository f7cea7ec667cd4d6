package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
)

// loginPoll is how often 'toolctl mcp login' asks toold for the server's
// state.
const loginPoll = 250 * time.Millisecond

// loginPrompt shows the server's name and the URL a person opens.
const loginPrompt = "Open this URL in a browser to authorize toold with %s:\n\n  %s\n\nWaiting for the authorization...\n"

func (a *app) newMCPLoginCmd() *cobra.Command {
	var (
		timeout time.Duration
		force   bool
	)
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
read) and refreshes it; a restart does not ask again.

--force discards the stored token first (a token for the wrong account, or
with too few scopes) and restarts the server with the same entry, so that
the authorization runs again; calls running on the server end.`,
		Example: `  toolctl mcp login linear
  toolctl mcp login --force linear    # authorize again, e.g. as another account`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return a.runMCPLogin(ctx, args[0], force)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up waiting after this long")
	cmd.Flags().BoolVar(&force, "force", false, "discard the stored token and authorize again")
	return cmd
}

func (a *app) runMCPLogin(ctx context.Context, name string, force bool) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	admin := pb.NewAdminServiceClient(conn)
	shown, asked := "", false
	if force {
		resp, err := admin.ReauthorizeMcpServer(ctx, &pb.ReauthorizeMcpServerRequest{Name: name})
		if err != nil {
			if status.Code(err) == codes.NotFound {
				return &exitError{code: exitFailure, err: fmt.Errorf("no MCP server %s ('toolctl mcp list' shows them)", name)}
			}
			return a.rpcError("authorize the MCP server again", err)
		}
		// The URL at once: the person may finish before the first poll.
		if st := resp.GetServer(); st.GetState() == pb.McpServerState_MCP_SERVER_STATE_AUTHORIZING && st.GetAuthorizationUrl() != "" {
			shown, asked = st.GetAuthorizationUrl(), true
			fmt.Fprintf(a.stdout, loginPrompt, name, shown)
		}
	}
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
				fmt.Fprintf(a.stdout, loginPrompt, name, u)
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
