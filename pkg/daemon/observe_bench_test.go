package daemon_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/daemon/daemontest"
	"github.com/toold/toold/pkg/hooks"
)

// BenchmarkCallObserved is the round trip of a think call through a real
// daemon, on one stream: with the audit log off and on (history off both
// times, to isolate the audit log; with the default sync_every of 64 and
// with 1024: at full speed the bound on unsynced records makes appends wait
// for fsync), then with a trivial pre-hook in bash and in python3 (audit
// on).
func BenchmarkCallObserved(b *testing.B) {
	off := false
	cases := []struct {
		name string
		cfg  func(*config.Config)
	}{
		{"audit=off", func(c *config.Config) { c.Audit.Enabled = &off; c.History.Backend = "off" }},
		{"audit=on", func(c *config.Config) { c.History.Backend = "off" }},
		{"audit=on,sync_every=1024", func(c *config.Config) { c.History.Backend = "off"; c.Audit.SyncEvery = 1024 }},
		{"audit=on,history=on", func(c *config.Config) {}},
		{"hook=bash", func(c *config.Config) {
			c.History.Backend = "off"
			c.Hooks = hooks.Config{Shell: "/bin/bash", Pre: []hooks.Hook{{Command: "exit 0"}}}
		}},
		{"hook=python3", func(c *config.Config) {
			c.History.Backend = "off"
			c.Hooks = hooks.Config{Pre: []hooks.Hook{{Command: "exec /usr/bin/python3 -c 'import json,sys; json.load(sys.stdin)'"}}}
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			d := daemontest.Start(b, daemontest.WithConfig(bc.cfg))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := d.Client.ExecuteTool(ctx)
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprint(i)
				if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: "think",
					Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"x"}`}}}}); err != nil {
					b.Fatal(err)
				}
				for {
					ev, err := s.Recv()
					if err != nil {
						b.Fatal(err)
					}
					if e := ev.GetEnd(); e != nil && ev.GetCallId() == id {
						if !e.GetResult().GetSuccess() {
							b.Fatal(e)
						}
						break
					}
				}
			}
		})
	}
}

// BenchmarkCallRate64 is row 2 of toolbench at concurrency 64 in one
// process: 64 streams, each on a connection of its own as in row 2 (one
// agent, one connection), each making think calls back to back through a
// real daemon with the defaults (audit log and history on). Run it with
// -mutexprofile and -blockprofile to find what serializes calls.
func BenchmarkCallRate64(b *testing.B) {
	d := daemontest.Start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	var streams atomic.Int64
	b.RunParallel(func(p *testing.PB) {
		conn, err := grpc.NewClient("unix://"+d.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		s, err := pb.NewToolServiceClient(conn).ExecuteTool(ctx)
		if err != nil {
			b.Error(err)
			return
		}
		prefix := fmt.Sprint(streams.Add(1), "-")
		i := 0
		for p.Next() {
			i++
			id := prefix + fmt.Sprint(i)
			if err := s.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Call{Call: &pb.ToolCall{CallId: id, Name: "think",
				Arguments: &pb.ToolCall_ArgumentsJson{ArgumentsJson: `{"thought":"x"}`}}}}); err != nil {
				b.Error(err)
				return
			}
			for {
				ev, err := s.Recv()
				if err != nil {
					b.Error(err)
					return
				}
				if e := ev.GetEnd(); e != nil && ev.GetCallId() == id {
					if !e.GetResult().GetSuccess() {
						b.Error(e)
						return
					}
					break
				}
			}
		}
		_ = s.CloseSend()
	})
}
