// Package mcphosts drives real MCP hosts, unmodified and pinned from npm
// (testdata/hosts, installed by `make mcp-hosts` into .tools/hosts), against
// toold: each host's own MCP configuration, written as its documentation
// tells a user, must connect to toold. The hosts run in a network
// namespace of their own (loopback only), so they stay off the network.
package mcphosts
