// Package mcppb converts the MCP plugin's configuration (pkg/mcp/mcpconfig)
// to and from the AdminService's generated messages: the one conversion
// that the admin service (pkg/service) and toolctl both use.
package mcppb

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config/value"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
)

// ConfigFromPB converts an AdminService server entry to the
// configuration the MCP client takes.
func ConfigFromPB(c *pb.McpServerConfig) mcpconfig.Server {
	out := mcpconfig.Server{
		Command:  c.GetCommand(),
		Args:     c.GetArgs(),
		Env:      c.GetEnv(),
		Cwd:      c.GetCwd(),
		URL:      c.GetUrl(),
		Headers:  c.GetHeaders(),
		Type:     c.GetType(),
		Disabled: c.GetDisabled(),
	}
	if o := c.GetOauth(); o != nil {
		out.OAuth = &mcpconfig.OAuth{
			ClientID: o.GetClientId(), ClientSecret: o.GetClientSecret(), ClientMetadataURL: o.GetClientMetadataUrl(),
			CallbackPort: int(o.GetCallbackPort()), Scopes: o.GetScopes(), Grant: o.GetGrant(),
		}
	}
	out.Toold.Risk = RiskName(c.GetRisk())
	for tool, r := range c.GetToolRisk() {
		if out.Toold.ToolRisk == nil {
			out.Toold.ToolRisk = map[string]string{}
		}
		out.Toold.ToolRisk[tool] = RiskName(r)
		if out.Toold.ToolRisk[tool] == "" {
			out.Toold.ToolRisk[tool] = "unspecified"
		}
	}
	if d := c.GetIdleTimeout(); d != nil {
		out.Toold.IdleTimeout = value.Duration(d.AsDuration())
	}
	if d := c.GetMaxTimeout(); d != nil {
		out.Toold.MaxTimeout = value.Duration(d.AsDuration())
	}
	return out
}

// ConfigToPB converts a server entry of the configuration (a file's, or
// one toolctl built) to the AdminService's message.
func ConfigToPB(c mcpconfig.Server) *pb.McpServerConfig {
	out := &pb.McpServerConfig{
		Command:  c.Command,
		Args:     c.Args,
		Env:      c.Env,
		Cwd:      c.Cwd,
		Url:      c.URL,
		Headers:  c.Headers,
		Type:     c.Type,
		Disabled: c.Disabled,
		Risk:     RiskToPB(c.Toold.Risk),
	}
	if o := c.OAuth; o != nil {
		out.Oauth = &pb.McpServerOAuth{
			ClientId: o.ClientID, ClientSecret: o.ClientSecret, ClientMetadataUrl: o.ClientMetadataURL,
			CallbackPort: int32(o.CallbackPort), Scopes: o.Scopes, Grant: o.Grant,
		}
	}
	for tool, r := range c.Toold.ToolRisk {
		if out.ToolRisk == nil {
			out.ToolRisk = map[string]pb.RiskLevel{}
		}
		out.ToolRisk[tool] = RiskToPB(r)
	}
	if c.Toold.IdleTimeout > 0 {
		out.IdleTimeout = durationpb.New(time.Duration(c.Toold.IdleTimeout))
	}
	if c.Toold.MaxTimeout > 0 {
		out.MaxTimeout = durationpb.New(time.Duration(c.Toold.MaxTimeout))
	}
	return out
}

// RiskName is the configuration's spelling of a risk level; "" for
// unspecified.
func RiskName(r pb.RiskLevel) string {
	switch r {
	case pb.RiskLevel_RISK_LEVEL_LOW:
		return "low"
	case pb.RiskLevel_RISK_LEVEL_MEDIUM:
		return "medium"
	case pb.RiskLevel_RISK_LEVEL_HIGH:
		return "high"
	}
	return ""
}

// RiskToPB converts the configuration's spelling of a risk level
// (mcpconfig.ParseRisk); anything else is unspecified.
func RiskToPB(s string) pb.RiskLevel {
	switch r, _ := mcpconfig.ParseRisk(s); r {
	case "low":
		return pb.RiskLevel_RISK_LEVEL_LOW
	case "medium":
		return pb.RiskLevel_RISK_LEVEL_MEDIUM
	case "high":
		return pb.RiskLevel_RISK_LEVEL_HIGH
	}
	return pb.RiskLevel_RISK_LEVEL_UNSPECIFIED
}
