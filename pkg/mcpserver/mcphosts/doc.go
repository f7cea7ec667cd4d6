// Package mcphosts drives real MCP hosts, unmodified and pinned from npm
// (testdata/hosts, installed by `make mcp-hosts` into .tools/hosts) —
// codex, Claude Code and gemini-cli — against toold. Each host runs
// headless in a network namespace of the test's own (loopback only), with
// its own configuration written as its page in docs/hosts tells a user,
// against a scripted model: a local endpoint speaking the host's provider
// API (OpenAI Responses, Anthropic Messages, Gemini) that replays a turn
// of tool calls and checks that every result reached the host's next
// request to the model. The turn tests run toold as the host's MCP server
// (stdio and HTTP); the hook tests run toold as the judge of the host's
// own tools (its pre-tool hook calling `toolctl hook`). The dialect test
// (TestHostDialects) has each host call its own tools and compares the
// tool definitions and results it sends its model with toold's dialect of
// that host (`toold mcp --dialect`).
//
// MCPHOSTS_DUMP=FILE appends every request the scripted models receive to
// FILE, whole, for debugging a host's wire format.
package mcphosts
