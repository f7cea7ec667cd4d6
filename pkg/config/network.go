package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// NetworkMode is terminal.network: true (the default: commands reach the
// network directly), false (with a sandbox, no TCP at all), or proxy:
// commands get HTTP_PROXY / HTTPS_PROXY pointing at toold's egress proxy,
// which applies the policy's host rules and refuses private, loopback and
// metadata addresses; with a sandbox (Landlock ABI >= 4), TCP connections
// other than to the proxy's port are refused too.
type NetworkMode struct {
	// Off refuses sandboxed commands TCP connect and bind.
	Off bool
	// Proxy routes commands through the egress proxy.
	Proxy bool
}

// UnmarshalYAML accepts true, false or "proxy".
func (n *NetworkMode) UnmarshalYAML(v *yaml.Node) error {
	var b bool
	if err := v.Decode(&b); err == nil {
		*n = NetworkMode{Off: !b}
		return nil
	}
	var s string
	if err := v.Decode(&s); err == nil && s == "proxy" {
		*n = NetworkMode{Proxy: true}
		return nil
	}
	return fmt.Errorf("terminal.network: want true, false or proxy, not %q", v.Value)
}

// MarshalYAML writes the mode back as true, false or proxy.
func (n NetworkMode) MarshalYAML() (any, error) {
	if n.Proxy {
		return "proxy", nil
	}
	return !n.Off, nil
}
