// Package mcpconformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/conformance and
// installed by `make mcp-conformance-deps` into .tools/conformance with the
// Node.js it needs) against toold's MCP server over HTTP. Its tests are the
// package: the expected failures, each with its reason, are the baseline
// files in testdata/conformance, so the gate is exact — a new failure fails
// the test, and so does a listed failure that now passes.
package mcpconformance
