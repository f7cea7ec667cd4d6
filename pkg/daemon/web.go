package daemon

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpproxy"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/netguard"
	"github.com/toold/toold/pkg/tools"
	"github.com/toold/toold/pkg/tools/terminal"
	"github.com/toold/toold/pkg/tools/vcs"
	"github.com/toold/toold/pkg/tools/web"
	"github.com/toold/toold/pkg/workspace"
)

// webOptions wires web_operations: the policy's host rules (a host that a
// rule allows by name may reach private addresses, never metadata; see
// web.Options.Rules). A redirect to another host
// is not judged here: the tool asks its call's sink (tools.Sink.Authorize),
// and the executor judges it with the stream's mode, traced and audited.
// Proxies come from toold's environment (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY), read once.
func (m *Main) webOptions(limits tools.Limits) web.Options {
	g := &netguard.Guard{Refuse: m.self.refuse}
	opts := web.Options{Guard: g, Search: m.Config.Web.Search, Limits: limits, UserAgent: "toold/" + Version + " (web_fetch)",
		FetchMemory: m.Config.Web.FetchMemoryBytes}
	pf := httpproxy.FromEnvironment().ProxyFunc()
	opts.Proxy = func(u *url.URL) (*url.URL, error) { return pf(u) }
	if eng := m.Capabilities.Hosts; eng != nil {
		opts.Rules = eng
	}
	return opts
}

// MoreOptions configure the built-in tools after terminal_operations.
type MoreOptions struct {
	// Web configures web_operations.
	Web web.Options
	// GitHooks lets git run the repository's hooks (vcs.hooks).
	GitHooks bool
	// JournalDir is where apply_patch journals its patches
	// (fileops.Options.JournalDir); empty: not journaled.
	JournalDir string
}

// moreOptions builds MoreOptions from the configuration and the policy.
func (m *Main) moreOptions(limits tools.Limits) MoreOptions {
	return MoreOptions{Web: m.webOptions(limits), GitHooks: m.Config.VCS.Hooks}
}

// vcsOptions configures build_and_version_control: git in the workspace,
// run_task through terminal_operations (so a task runs exactly like
// run_command of the command it expands to).
func vcsOptions(ws *workspace.Workspace, term tools.Tool, mgr *terminal.Manager, limits tools.Limits, hooks bool) vcs.Options {
	o := vcs.Options{Terminal: term, Limits: limits, Hooks: hooks}
	if mgr != nil {
		o.Exec = mgr.Exec // git runs as commands do: sandboxed
	}
	if ws != nil {
		o.Root = ws.Dir()
	}
	return o
}

// startEgress starts the egress proxy when terminal.network is proxy and
// points commands at it: HTTP(S)_PROXY in their environment and, with a
// Landlock sandbox, TCP connect allowed only to the proxy's port. The
// proxy applies the policy's host rules as they apply to run_command (a
// host that asks is refused: a proxy cannot ask) and the private-address
// guard (a host a rule allows by name may reach private addresses).
func (m *Main) startEgress(tcfg *terminal.Config) error {
	if !m.Config.Terminal.EgressProxy() {
		return nil
	}
	g := &netguard.Guard{Refuse: m.self.refuse}
	p := &netguard.Proxy{Guard: g, Logger: m.Logger}
	if eng := m.Capabilities.Hosts; eng != nil {
		g.AllowPrivate = netguard.AllowByRules(eng, terminal.ToolName, "run_command")
		mode := m.mode
		p.Judge = func(ctx context.Context, host string) error {
			v, err := eng.Explain(ctx, &authz.Request{Mode: mode, Tool: terminal.ToolName, Operation: "run_command",
				Effect: tools.Effect{Hosts: []string{host}}, Risk: tools.RiskLow})
			if err != nil {
				return err
			}
			switch v.Decision {
			case authz.Allow:
				return nil
			case authz.Deny:
				return &netguard.DeniedError{Msg: fmt.Sprintf("host %s is denied for commands (rule %s): %s", host, v.Rule, v.Reason)}
			}
			return &netguard.DeniedError{Msg: fmt.Sprintf("host %s needs a person's approval (rule %s: %s), which a command's connection cannot ask for", host, v.Rule, v.Reason)}
		}
	}
	// The port of the proxy before a restart, when it is free: sandboxed
	// processes that outlived that toold reach the proxy there (their
	// helper forwards to it), and nothing else gets to listen in its place.
	addrFile := ""
	if m.stateLocked {
		addrFile = filepath.Join(m.memory.stateDir, "egress.addr")
	}
	started := false
	if prev, err := os.ReadFile(addrFile); addrFile != "" && err == nil {
		started = p.Start(strings.TrimSpace(string(prev))) == nil
	}
	if !started {
		if err := p.Start("127.0.0.1:0"); err != nil {
			return fmt.Errorf("terminal.network proxy: %w", err)
		}
	}
	if addrFile != "" {
		_ = os.WriteFile(addrFile, []byte(p.Addr()+"\n"), 0o600)
	}
	m.egress = p
	env := map[string]string{}
	for k, v := range tcfg.Env {
		env[k] = v
	}
	for k, v := range p.Env() {
		env[k] = v
	}
	tcfg.Env = env
	if tcfg.Sandbox != nil {
		_, port, _ := net.SplitHostPort(p.Addr())
		pn, _ := strconv.Atoi(port)
		sb := *tcfg.Sandbox
		sb.NoNetwork = true
		sb.ConnectPorts = append(append([]uint16{}, sb.ConnectPorts...), uint16(pn))
		if sb.Isolate {
			sb.Proxy = p.Addr()
		}
		tcfg.Sandbox = &sb
	}
	m.Logger.Info("egress proxy for commands", "addr", p.Addr(), "sandboxed", tcfg.Sandbox != nil)
	return nil
}

// closeEgress stops the egress proxy; safe to call more than once.
func (m *Main) closeEgress() {
	if m.egress != nil {
		_ = m.egress.Close()
		m.egress = nil
	}
}
