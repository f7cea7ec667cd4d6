package mcpconformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// The suite's task scenarios (SEP-2663) call fixture tools of its
// reference server: greet (answers in the request), slow_compute,
// failing_job, protocol_error_job, confirm_delete and multi_input (tasks).
// They are registered in the tested toold as toold tools — each a real
// tools.Tool run by toold's executor, policy and task machinery, the way
// run_command is — so those scenarios test toold's tasks extension rather
// than a fixture server. toold's own tools are tested as tasks in
// pkg/daemon (TestMCPTasks).

// fixture is one of the suite's fixture tools.
type fixture struct {
	spec tools.Spec
	run  func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error)
}

var _ tools.Tool = (*fixture)(nil)

func (f *fixture) Spec() tools.Spec { return f.spec }

func (f *fixture) Describe(*tools.Call) tools.Effect {
	return tools.Effect{Display: "conformance fixture " + f.spec.Name}
}

func (f *fixture) Run(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
	return f.run(ctx, c, s)
}

func newFixture(name string, long bool, schema string, run func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error)) *fixture {
	return &fixture{
		spec: tools.Spec{Name: name, Description: "The conformance suite's fixture " + name + ".", Source: "builtin",
			Operations: []tools.OperationSpec{{Name: name, Risk: tools.RiskLow, Schema: json.RawMessage(schema), Long: long}}},
		run: run,
	}
}

// conformanceFixtures are the fixture tools of the task scenarios.
func conformanceFixtures() []tools.Tool {
	return []tools.Tool{
		newFixture("greet", false, `{"type":"object","properties":{"name":{"type":"string"}}}`,
			func(_ context.Context, c *tools.Call, _ *tools.Sink) (*tools.Result, error) {
				return &tools.Result{Text: fmt.Sprintf("Hello, %v!", c.Args["name"])}, nil
			}),
		newFixture("slow_compute", true, `{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`,
			func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
				n, _ := c.Args["seconds"].(json.Number)
				secs, _ := n.Float64()
				_ = s.Progress("computing", 0)
				select {
				case <-time.After(time.Duration(secs * float64(time.Second))):
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				return &tools.Result{Text: fmt.Sprintf("computed %v after %vs", c.Args["label"], secs)}, nil
			}),
		newFixture("failing_job", true, `{"type":"object"}`,
			func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
				return nil, errdefs.Failed("the job failed, as this fixture always does")
			}),
		newFixture("protocol_error_job", true, `{"type":"object"}`,
			func(context.Context, *tools.Call, *tools.Sink) (*tools.Result, error) {
				return nil, errdefs.New(errdefs.ErrInternal, "the fixture broke inside the server")
			}),
		newFixture("confirm_delete", true, `{"type":"object","properties":{"filename":{"type":"string"}}}`,
			func(ctx context.Context, c *tools.Call, s *tools.Sink) (*tools.Result, error) {
				a, err := s.Ask(ctx, tools.Question{Prompt: fmt.Sprintf("Delete %v?", c.Args["filename"])})
				if err != nil {
					return nil, err
				}
				return &tools.Result{Text: "answered: " + a}, nil
			}),
		newFixture("multi_input", true, `{"type":"object"}`,
			func(ctx context.Context, _ *tools.Call, s *tools.Sink) (*tools.Result, error) {
				// Two questions at once: both are pending input requests.
				var wg sync.WaitGroup
				answers := make([]string, 2)
				errs := make([]error, 2)
				for i := range 2 {
					wg.Go(func() { answers[i], errs[i] = s.Ask(ctx, tools.Question{Prompt: fmt.Sprintf("Question %d?", i+1)}) })
				}
				wg.Wait()
				return &tools.Result{Text: fmt.Sprintf("answers %q, errors %v", answers, errs)}, nil
			}),
	}
}
