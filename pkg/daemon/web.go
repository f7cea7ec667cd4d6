package daemon

import (
	"context"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/vcs"
	"github.com/toold/toold/pkg/tools/web"
	"github.com/toold/toold/pkg/workspace"
)

// webOptions wires web_operations to the policy: a host that a policy rule
// allows by name may reach private addresses (never metadata), and a
// redirect to another host is judged again. Proxies come from toold's
// environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), read once.
func (m *Main) webOptions(limits tools.Limits) web.Options {
	g := &netguard.Guard{}
	opts := web.Options{Guard: g, Search: m.Config.Web.Search, Limits: limits, UserAgent: "toold/" + Version + " (web_fetch)"}
	pf := httpproxy.FromEnvironment().ProxyFunc()
	opts.Proxy = func(u *url.URL) (*url.URL, error) { return pf(u) }
	eng, ok := m.Authorizer.(*authz.Engine)
	if !ok {
		return opts
	}
	g.AllowPrivate = func(h string) bool { return eng.HostRuleAllows("web_operations", "web_fetch", h) }
	mode, _ := authz.ParseMode(m.Config.ApprovalMode)
	opts.JudgeHost = func(ctx context.Context, call *tools.Call, host string) error {
		v, err := eng.Explain(ctx, &authz.Request{
			ConversationID: call.ConversationID, CallID: call.ID, Mode: mode,
			Tool: call.Tool, Operation: call.Operation, Args: call.Args,
			Effect: tools.Effect{Hosts: []string{host}}, Risk: tools.RiskMedium,
		})
		if err != nil {
			return err
		}
		switch v.Decision {
		case authz.Allow:
			return nil
		case authz.Deny:
			e := errdefs.New(errdefs.ErrDenied, "the page redirects to %s, which policy denies: %s", host, v.Reason)
			e.Rule = v.Rule
			return e
		}
		e := errdefs.New(errdefs.ErrDenied, "the page redirects to another host, %s, which is not allowed yet (%s); call web_fetch with the new URL to ask for it", host, strings.TrimSpace(v.Reason))
		e.Rule = v.Rule
		return e
	}
	return opts
}

// MoreOptions configure the built-in tools after terminal_operations.
type MoreOptions struct {
	// Web configures web_operations.
	Web web.Options
}

// moreOptions builds MoreOptions from the configuration and the policy.
func (m *Main) moreOptions(limits tools.Limits) MoreOptions {
	return MoreOptions{Web: m.webOptions(limits)}
}

// vcsOptions configures build_and_version_control: git in the workspace,
// run_task through terminal_operations (so a task runs exactly like
// run_command of the command it expands to).
func vcsOptions(ws *workspace.Workspace, term tools.Tool, limits tools.Limits) vcs.Options {
	o := vcs.Options{Terminal: term, Limits: limits}
	if ws != nil {
		o.Root = ws.Dir()
	}
	return o
}
