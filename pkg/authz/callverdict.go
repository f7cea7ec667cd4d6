package authz

// The verdict on a plain call, kept. A call whose effect names nothing to
// judge part by part (no path, command, host or environment: think, the
// todo and memory tools, most MCP tools) is judged as one facet, by the
// rules that match its tool and operation and by the approval mode. When
// no rule that matches its tool and operation looks at arguments, and the
// verdict is allow or deny, that verdict is the same for every such call
// of the tool and operation in the mode and at the risk: no grant changes
// an allow or a deny, and the rules are the engine's for its life (a new
// policy is a new Engine). Such verdicts are kept per engine, so a think
// call is not judged again on every call; an ask is always judged anew (a
// grant may lift it), as is anything else.

import (
	"sync"
	"sync/atomic"

	"github.com/toold/toold/pkg/tools"
)

// maxCallVerdicts bounds the verdicts an engine keeps: tool and operation
// names come from the registry on the call path, but Explain judges any
// name a client sends. Past the bound, calls are judged as before.
const maxCallVerdicts = 1024

// callVerdicts are the verdicts kept on plain calls (see the top of the
// file). The zero value is empty and ready.
type callVerdicts struct {
	m sync.Map // callVerdictKey -> *callVerdict
	n atomic.Int64
}

// callVerdictKey is what a plain call's verdict depends on, besides the
// request's Effect.Display (Verdict.Summary, made per call): the mode and
// risk as the judge reads them (ModeUnset is AUTO, RiskUnknown is high).
type callVerdictKey struct {
	tool, op string
	mode     Mode
	risk     tools.Risk
}

// callVerdict is a kept verdict, Summary empty; keep false says the
// verdict is judged on every call (an ask, or a rule that reads the
// arguments matches the tool and operation).
type callVerdict struct {
	keep bool
	v    Verdict
}

// plainCall reports whether req has nothing to judge but the call as a
// whole: its effect names no path, command, directory, host or
// environment variable, nothing unknown, and nothing about the sandbox.
// Effect.Display and Effect.Risk are not judged (Request.Risk is the
// risk). TestPlainCallKnowsEffect fails when tools.Effect gains a field, so
// that this is looked at again.
func plainCall(req *Request) bool {
	ef := &req.Effect
	return len(ef.Reads) == 0 && len(ef.Writes) == 0 && ef.Command == "" && ef.Dir == "" &&
		!ef.Interactive && ef.Unknown == "" && len(ef.Env) == 0 && !ef.OutsideSandbox &&
		!ef.CanLeaveSandbox && len(ef.Hosts) == 0 && !req.OutsideSandbox && req.Dir == ""
}

// decideKept is decide, with the verdict on a plain call kept (see the top
// of the file). The verdict is the one decide returns, field for field
// (TestCallVerdictsAgree).
func (e *Engine) decideKept(req *Request, consume bool) Verdict {
	if !plainCall(req) {
		return e.decide(req, consume)
	}
	k := callVerdictKey{tool: req.Tool, op: req.Operation, mode: req.Mode, risk: req.Risk}
	if k.mode == ModeUnset {
		k.mode = ModeAuto
	}
	if k.risk == tools.RiskUnknown {
		k.risk = tools.RiskHigh
	}
	if c, ok := e.kept.m.Load(k); ok {
		cv := c.(*callVerdict)
		if !cv.keep {
			return e.decide(req, consume)
		}
		v := cv.v
		v.Summary = (&judgement{e: e, req: req}).summary()
		return v
	}
	v := e.decide(req, consume)
	cv := &callVerdict{keep: v.Decision != Ask && v.Grant == nil && !e.rulesReadArgs(req.Tool, req.Operation)}
	if cv.keep {
		cv.v = v
		cv.v.Summary = ""
	}
	if e.kept.n.Load() < maxCallVerdicts {
		if _, loaded := e.kept.m.LoadOrStore(k, cv); !loaded {
			e.kept.n.Add(1)
		}
	}
	return v
}

// rulesReadArgs reports whether a rule that may match calls of tool and op
// matches on their arguments.
func (e *Engine) rulesReadArgs(tool, op string) bool {
	for _, r := range e.rules {
		if len(r.args) == 0 {
			continue
		}
		if (len(r.tools) == 0 || anyGlob(r.tools, tool)) && (len(r.ops) == 0 || anyGlob(r.ops, op)) {
			return true
		}
	}
	return false
}
