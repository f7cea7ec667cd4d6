#!/bin/sh
# toold as an MCP client, driven from the command line, for the conformance
# suite's client mode (pkg/mcpserver/mcpconformance): the suite runs this
# with its fake server's URL as the last argument and the scenario in
# MCP_CONFORMANCE_SCENARIO. It starts toold with that server in its MCP
# configuration (toold connects, initializes and lists the tools at start)
# and calls the scenario's tool with toolctl, as a user would.
# TOOLD_BIN and TOOLCTL_BIN name the binaries, NODE_BIN the suite's Node.js
# (to read the scenario's context).
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
# The OAuth client settings a user would write for the scenario: the
# client ID metadata document's URL, or the pre-registered client of the
# scenario's context.
oauth=
case "${MCP_CONFORMANCE_SCENARIO:-}" in
auth/basic-cimd) oauth=',"oauth":{"clientMetadataUrl":"https://conformance-test.local/client-metadata.json"}' ;;
auth/pre-registration)
	oauth=$("$NODE_BIN" -e 'const c=JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT); process.stdout.write(JSON.stringify({oauth:{clientId:c.client_id,clientSecret:c.client_secret}}).slice(1,-1))')
	oauth=",$oauth"
	;;
auth/client-credentials-basic)
	oauth=$("$NODE_BIN" -e 'const c=JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT); process.stdout.write(JSON.stringify({oauth:{clientId:c.client_id,clientSecret:c.client_secret,grant:"client_credentials"}}).slice(1,-1))')
	oauth=",$oauth"
	;;
esac
printf '{"mcpServers":{"conf":{"type":"http","url":"%s"%s}}}\n' "$url" "$oauth" >"$dir/mcp.json"
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
export TOOLD_SOCKET="$dir/toold.sock" TOOLD_STATE_DIR="$dir/state"
status=0
# toold serves once its first connection to the server ended, connected or
# not; a connection reset while the suite's servers are busy (every
# scenario runs at once) is retried by toold in the background. The calls
# below are the user's, who waits until the server shows connected (300
# looks, a minute or more, then calls anyway); the OAuth scenarios' servers connect only after
# the person authorizes.
case "${MCP_CONFORMANCE_SCENARIO:-}" in
auth/*) ;;
*)
	i=0
	until "$TOOLCTL_BIN" mcp list 2>/dev/null | grep -q '^conf .* connected, '; do
		i=$((i + 1))
		[ "$i" -gt 300 ] && break
		sleep 0.2
	done
	;;
esac
# person opens every OAuth authorization URL toold shows (toolctl mcp list)
# as a person's browser would, following the authorization server's
# redirect to toold's loopback listener, until process $1 ends.
person() {
	seen=
	while kill -0 "$1" 2>/dev/null; do
		u=$("$TOOLCTL_BIN" mcp list 2>/dev/null | sed -n 's/.*needs authorization: open \([^ ]*\) .*/\1/p')
		if [ -n "$u" ] && [ "$u" != "$seen" ]; then
			"$NODE_BIN" -e 'fetch(process.argv[1]).then(r=>r.text()).then(t=>process.stderr.write("browser: "+t)).catch(e=>process.stderr.write("browser: "+e+"\n"))' "$u" || true
			seen=$u
		fi
		sleep 0.2
	done
}
case "${MCP_CONFORMANCE_SCENARIO:-}" in
# OAuth: the operator logs in (toolctl mcp login waits while the person
# authorizes), then calls the server's tool (a step-up authorization during
# the call is the person's too). The login waits 90 s at most: with every
# scenario at once on a loaded machine the suite's servers (one Node.js
# process) answered toold's token exchange and listing 20-25 s after the
# person authorized (toold's debug log), and a 25 s wait gave up just
# before toold connected.
auth/*)
	"$TOOLCTL_BIN" mcp login conf --timeout 90s &
	p=$!
	person "$p"
	wait "$p" || status=$?
	"$TOOLCTL_BIN" call conf.test-tool &
	p=$!
	person "$p"
	wait "$p" || status=$?
	;;
tools_call) "$TOOLCTL_BIN" call conf.add_numbers a=5 b=3 || status=$? ;;
sse-retry) "$TOOLCTL_BIN" call conf.test_reconnection || status=$? ;;
# The server asks the person a form; the person accepts the defaults.
elicitation-sep1034-client-defaults) "$TOOLCTL_BIN" call --answer '' conf.test_client_elicitation_defaults || status=$? ;;
# SEP-2322: the server asks in input-required rounds (a yes/no form the
# person confirms); toold's client answers each round, and a call that
# follows another's rounds carries none of their state.
sep-2322-client-request-state)
	"$TOOLCTL_BIN" call --answer true conf.test_mrtr_echo_state || status=$?
	"$TOOLCTL_BIN" call --answer true conf.test_mrtr_no_state || status=$?
	"$TOOLCTL_BIN" call conf.test_mrtr_unrelated || status=$?
	"$TOOLCTL_BIN" call conf.test_mrtr_no_result_type || status=$?
	;;
# SEP-2243: the scenario's calls (MCP_CONFORMANCE_CONTEXT's toolCalls), each
# as a user would make it, its arguments as given.
http-custom-headers)
	for i in 0 1; do
		name=$("$NODE_BIN" -e 'const c=JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT).toolCalls['"$i"']; process.stdout.write(c.name)')
		"$NODE_BIN" -e 'const c=JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT).toolCalls['"$i"']; process.stdout.write(JSON.stringify(c.arguments))' |
			"$TOOLCTL_BIN" call --args - "conf.$name" || status=$?
	done
	;;
# Every tool the server lists, as a user would try them: toold must have
# refused (not registered) those whose x-mcp-header annotations are invalid.
http-invalid-tool-headers)
	"$TOOLCTL_BIN" call conf.valid_tool region=us-west1 || status=$?
	for t in invalid_empty_header invalid_object_header invalid_array_header invalid_null_header invalid_number_header \
		invalid_duplicate_same_case invalid_duplicate_diff_case invalid_space_in_name invalid_colon_in_name \
		invalid_non_ascii_name invalid_control_char_name; do
		if "$TOOLCTL_BIN" call "conf.$t" value=x 2>/dev/null; then
			echo "toold called $t, whose x-mcp-header is invalid" >&2
			status=1
		fi
	done
	;;
# The 2020-12 schema echo: the focal tool's inputSchema, as toold lists it,
# sent back verbatim to the echo tool.
json-schema-2020-12-preservation)
	"$TOOLCTL_BIN" tools --format mcp >"$dir/tools.json" || status=$?
	"$NODE_BIN" -e 'const l=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); const ts=Array.isArray(l)?l:l.tools;
		const t=ts.find(t=>t.name==="conf__json_schema_2020_12_tool"); process.stdout.write(JSON.stringify({schema:t.inputSchema||t.input_schema}))' "$dir/tools.json" |
		"$TOOLCTL_BIN" call --args - conf.json_schema_echo || status=$?
	;;
*) "$TOOLCTL_BIN" mcp list || status=$? ;;
esac
cat "$dir/log" >&2
exit "$status"
