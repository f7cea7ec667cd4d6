package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/toold/toold/gen/toold/v1"
)

func (a *app) newHealthCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Check that toold is serving",
		Long: `Check toold with the gRPC health protocol: the server as a whole and the
toold.v1.ToolService service. Prints SERVING and exits 0 when both serve;
otherwise prints the status and exits 1 (2 when toold cannot be reached).
When serving, it then prints the sandbox around commands: one line per
layer (writes, reads, network, control_plane, resources), in force or
MISSING and why.

With --connect-timeout given, waits up to it for a toold that is still
starting (its socket file not there yet, in a directory that is), so
'make run & toolctl --connect-timeout 2m health' works; without it, a
missing socket file fails at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runHealth(cmd.Context())
		},
	}
}

func (a *app) runHealth(ctx context.Context) error {
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for _, svc := range []string{"", pb.ToolService_ServiceDesc.ServiceName} {
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		st := resp.GetStatus()
		switch {
		case status.Code(err) == codes.NotFound:
			st = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
		case err != nil:
			return a.rpcError("health check", err)
		}
		if st != healthpb.HealthCheckResponse_SERVING {
			name := svc
			if name == "" {
				name = "server"
			}
			fmt.Fprintln(a.stdout, st)
			return &exitError{code: exitFailure, err: fmt.Errorf("toold at %s is not serving: %s: %s", a.where(), name, st)}
		}
	}
	if _, err := fmt.Fprintln(a.stdout, healthpb.HealthCheckResponse_SERVING); err != nil {
		return err
	}
	// The boundary around commands; a toold that does not report it (an
	// older one) is still healthy.
	if resp, err := pb.NewToolServiceClient(conn).ListTools(ctx, &pb.ListToolsRequest{}); err == nil && resp.GetSandbox() != nil {
		printSandbox(a.stdout, resp.GetSandbox())
	}
	return nil
}

// printSandbox writes one line per layer of the sandbox: "sandbox: reads
// in force: how" or "sandbox: network MISSING: why".
func printSandbox(w io.Writer, st *pb.SandboxStatus) {
	if !st.GetEnabled() {
		fmt.Fprintln(w, "sandbox: OFF (terminal.sandbox: off): commands run with toold's own rights")
		return
	}
	for _, l := range st.GetLayers() {
		state := "in force"
		if !l.GetInForce() {
			state = "MISSING"
		}
		fmt.Fprintf(w, "sandbox: %s %s: %s\n", l.GetName(), state, l.GetDetail())
	}
}
