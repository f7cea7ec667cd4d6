package config

import (
	"github.com/toold/toold/pkg/audit/auditconfig"
	"github.com/toold/toold/pkg/checkpoint/checkpointconfig"
	"github.com/toold/toold/pkg/history/historyconfig"
	"github.com/toold/toold/pkg/hooks/hookconfig"
	"github.com/toold/toold/pkg/memory/memconfig"
	"github.com/toold/toold/pkg/tools/terminal/termconfig"
	"github.com/toold/toold/pkg/tools/web/webconfig"
)

// The plugins' sections, each owned by its plugin in a leaf package that
// imports nothing of toold's but pkg/config/value: pkg/config composes
// them without linking the plugins (toolctl, which reads a few of these
// types, links no daemon internals; see TestToolctlLinksNoDaemonInternals).
type (
	// Terminal is the "terminal:" section (termconfig.Terminal).
	Terminal = termconfig.Terminal
	// NetworkMode is terminal.network (termconfig.NetworkMode).
	NetworkMode = termconfig.NetworkMode
	// Web is the "web:" section (webconfig.Web).
	Web = webconfig.Web
	// Memory is the "memory:" section (memconfig.Memory).
	Memory = memconfig.Memory
	// Audit is the "audit:" section (auditconfig.Audit).
	Audit = auditconfig.Audit
	// History is the "history:" section (historyconfig.History).
	History = historyconfig.History
	// HooksConfig is the "hooks:" section (hookconfig.Config).
	HooksConfig = hookconfig.Config
	// Checkpoints is the "checkpoints:" section
	// (checkpointconfig.Checkpoints).
	Checkpoints = checkpointconfig.Checkpoints
)
