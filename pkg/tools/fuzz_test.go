package tools_test

import (
	"errors"
	"testing"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// FuzzResolvePrepare drives name resolution and argument coercion with any
// name and any JSON: every failure is a typed error, a resolved target is a
// registered tool, and coercion is idempotent (arguments Prepare accepted
// need no coercion the second time).
func FuzzResolvePrepare(f *testing.F) {
	for _, s := range [][2]string{
		{"read_file", `{"path":"a.go","offset":"42","limit":"7"}`},
		{"file_operations", `{"operation":"read_file","path":"x"}`},
		{"file_operations.list_dir", `{"operation":"list_dir"}`},
		{"everything.echo", `{"message":5}`},
		{"ask_user", `{"prompt":["a"]}`},
		{"write_file", `{"path":"p","content":null,"offset":null}`},
		{"think", `{"thought":true}`},
		{"", `{}`},
		{"file_operations.", `{"operation":1}`},
	} {
		f.Add(s[0], s[1])
	}
	r := testRegistry(f)
	names := map[string]bool{}
	for _, info := range r.List() {
		names[info.Spec.Name] = true
	}
	f.Fuzz(func(t *testing.T, name, argsJSON string) {
		args, err := tools.DecodeArguments(argsJSON)
		if err != nil {
			mustBeTyped(t, err)
			return
		}
		target, err := r.Resolve(name, args)
		if err != nil {
			mustBeTyped(t, err)
			return
		}
		if !names[target.ToolName] {
			t.Fatalf("%q resolved to %q, which is not registered", name, target.ToolName)
		}
		if _, err := target.Prepare(args); err != nil {
			mustBeTyped(t, err)
			return
		}
		if again, err := target.Prepare(args); err != nil || len(again) > 0 {
			t.Fatalf("prepared arguments %v changed again: %v %v", args, again, err)
		}
	})
}

func mustBeTyped(t *testing.T, err error) {
	t.Helper()
	var e *errdefs.Error
	if !errors.As(err, &e) || e.Msg == "" {
		t.Fatalf("untyped error %T: %v", err, err)
	}
}
