package memory_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/memory"
)

var benchWords = strings.Fields(`build test deploy cache flaky socket timeout retry database index query
migration schema rollback cluster node pod container image registry token rotate secretless config
flag option default override environment variable path workspace module package import vendor
release tag branch merge rebase commit review lint format vet race goroutine channel mutex context
cancel deadline stream chunk buffer queue backpressure latency throughput benchmark profile heap
allocation garbage compiler linker binary static dynamic library plugin extension protocol grpc
json yaml toml proto schema field enum oneof message service method handler middleware interceptor
logging tracing span metric exporter collector dashboard alert pager incident postmortem runbook`)

func benchText(r *rand.Rand) string {
	w := make([]string, 12)
	for i := range w {
		w[i] = benchWords[r.IntN(len(benchWords))]
	}
	return "Remember: " + strings.Join(w, " ") + "."
}

// BenchmarkSearch searches 10,000 memories on each backend.
func BenchmarkSearch(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			t := &testing.T{}
			_ = t
			var loc string
			switch be.name {
			case "sqlite":
				loc = b.TempDir() + "/m.db"
			default:
				loc = pgtestDatabase(b)
			}
			bk, err := be.open(context.Background(), loc)
			if err != nil {
				b.Fatal(err)
			}
			s := memory.New(memory.Config{Backend: bk})
			defer s.Close()
			ctx := context.Background()
			r := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 10_000; i++ {
				if _, err := s.Put(ctx, alice, benchText(r), nil, memory.ScopeWorkspace); err != nil {
					b.Fatal(err)
				}
			}
			queries := []string{"flaky socket timeout", "database migration rollback", "goroutine channel", "tracing exporter collector", "release"}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, _, err := s.Search(ctx, alice, queries[i%len(queries)], memory.Filter{}, 10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
