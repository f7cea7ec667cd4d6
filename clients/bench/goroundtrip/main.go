// Command goroundtrip measures the round trip of a no-op call (think) with
// the generated Go client on one ExecuteTool stream, for comparison with the
// Python and TypeScript clients (clients/bench/run.py runs all three against
// the same toold). It prints {"p50_us": ..., "p99_us": ..., "n": ...}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/toold/toold/gen/toold/v1"
)

func main() {
	socket := flag.String("socket", "./toold.sock", "toold's unix socket")
	n := flag.Int("n", 2000, "measured calls")
	warm := flag.Int("warmup", 200, "calls before measuring")
	flag.Parse()
	if err := run(*socket, *n, *warm); err != nil {
		log.Fatal(err)
	}
}

func run(socket string, n, warm int) error {
	conn, err := grpc.NewClient("unix:"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Hello{Hello: &pb.Hello{ClientName: "goroundtrip"}}}); err != nil {
		return err
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < warm+n; i++ {
		id := fmt.Sprint(i)
		start := time.Now()
		err := stream.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{
			CallId: id, Name: "think", Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"x"}`},
		}}})
		if err != nil {
			return err
		}
		for {
			ev, err := stream.Recv()
			if err != nil {
				return err
			}
			if end := ev.GetEnd(); end != nil && ev.GetCallId() == id {
				if !end.GetResult().GetSuccess() {
					return fmt.Errorf("call %s failed: %v", id, end.GetResult().GetError())
				}
				break
			}
		}
		if i >= warm {
			lat = append(lat, time.Since(start))
		}
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"p50_us": float64(lat[len(lat)/2].Microseconds()),
		"p99_us": float64(lat[len(lat)*99/100].Microseconds()),
		"n":      len(lat),
	})
}
