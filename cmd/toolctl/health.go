package main

import (
	"context"
	"fmt"

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

Waits up to --connect-timeout for a toold that is still starting, so
'make run & toolctl health' works.`,
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
	_, err = fmt.Fprintln(a.stdout, healthpb.HealthCheckResponse_SERVING)
	return err
}
