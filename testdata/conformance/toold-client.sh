#!/bin/sh
# toold as an MCP client, driven from the command line, for the conformance
# suite's client mode (pkg/mcpserver/mcpconformance): the suite runs this
# with its fake server's URL as the last argument and the scenario in
# MCP_CONFORMANCE_SCENARIO. It starts toold with that server in its MCP
# configuration (toold connects, initializes and lists the tools at start)
# and calls the scenario's tool with toolctl, as a user would.
# TOOLD_BIN and TOOLCTL_BIN name the binaries.
set -eu
url=$1
dir=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/ws" "$dir/state"
printf '{"mcpServers":{"conf":{"type":"http","url":"%s"}}}\n' "$url" >"$dir/mcp.json"
# A server that refuses the connection (the OAuth scenarios) is retried in
# the background; start-up waits for it 20 s at most (the suite runs every scenario at once).
printf 'mcp:\n  startup_wait: 20s\n' >"$dir/toold.yaml"
"$TOOLD_BIN" --config "$dir/toold.yaml" --socket "$dir/toold.sock" --workspace "$dir/ws" \
	--state-dir "$dir/state" --approval-mode yolo --log-level debug --mcp-config "$dir/mcp.json" 2>"$dir/log" &
pid=$!
# The socket appears once start-up (and the MCP connection) is done.
i=0
while [ ! -S "$dir/toold.sock" ]; do
	i=$((i + 1))
	if [ "$i" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
		cat "$dir/log" >&2
		exit 1
	fi
	sleep 0.1
done
export TOOLD_SOCKET="$dir/toold.sock"
status=0
case "${MCP_CONFORMANCE_SCENARIO:-}" in
tools_call) "$TOOLCTL_BIN" call conf.add_numbers a=5 b=3 || status=$? ;;
sse-retry) "$TOOLCTL_BIN" call conf.test_reconnection || status=$? ;;
# The server asks the person a form; the person accepts the defaults.
elicitation-sep1034-client-defaults) "$TOOLCTL_BIN" call --answer '' conf.test_client_elicitation_defaults || status=$? ;;
*) "$TOOLCTL_BIN" mcp list || status=$? ;;
esac
cat "$dir/log" >&2
exit "$status"
