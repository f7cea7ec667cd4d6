package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// NetworkMode is terminal.network: proxy, false or true. proxy: commands
// get HTTP_PROXY / HTTPS_PROXY pointing at toold's egress proxy, which
// applies the policy's host rules and refuses private, loopback and
// metadata addresses; in the sandbox's network namespace it is the only
// thing reachable (the default with a sandbox). false: no network at all
// (sandbox only). true: the host's network, unconfined (the default
// without a sandbox).
type NetworkMode struct {
	// Off gives sandboxed commands no network.
	Off bool
	// Proxy routes commands through the egress proxy.
	Proxy bool
	// Direct (true) gives commands the host's network.
	Direct bool
}

// UnmarshalYAML accepts true, false or "proxy".
func (n *NetworkMode) UnmarshalYAML(v *yaml.Node) error {
	var b bool
	if err := v.Decode(&b); err == nil {
		*n = NetworkMode{Off: !b, Direct: b}
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
	switch {
	case n.Proxy:
		return "proxy", nil
	case n.Off:
		return false, nil
	case n.Direct:
		return true, nil
	}
	return nil, nil
}
