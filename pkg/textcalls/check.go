package textcalls

import (
	"encoding/json"

	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/tools"
)

// Checked is a parsed call after the pipeline's preparation: the tool and
// operation its name resolves to, the arguments as they would run, every
// repair made, or the error the call would end with.
type Checked struct {
	Tool, Operation string
	// Arguments are the coerced arguments as JSON ("" when they could not
	// be decoded).
	Arguments string
	Coercions []tools.Coercion
	// Err is a classified error (errdefs) written for the model.
	Err error
}

// Check runs c through what the executor does before policy: decode and
// repair the argument text, resolve the name, coerce and validate by the
// schema. It executes nothing and asks nobody.
func Check(reg *tools.Registry, c Call) Checked {
	if c.Err != "" {
		return Checked{Err: errdefs.New(errdefs.ErrInvalidArgument, "%s", c.Err)}
	}
	args, err := tools.DecodeArguments(c.Arguments)
	if err != nil {
		return Checked{Err: err}
	}
	target, err := reg.Resolve(c.Name, args)
	if err != nil {
		return Checked{Err: err}
	}
	out := Checked{Tool: target.ToolName, Operation: target.Operation}
	prepared, err := target.Prepare(args)
	out.Coercions, out.Err = append(target.Repairs(), prepared...), err
	if b, err := json.Marshal(args); err == nil {
		out.Arguments = string(b)
	}
	return out
}
