#!/usr/bin/env python3
"""Extracts the shell calls a real codex session made into codex.json
(replayed by TestCodexSessions).

Usage: extract_codex.py CODEX_GIT_DIR > codex.json

The session is codex's own recording of a TUI session with gpt-5 that the
codex repository keeps as a test fixture (codex-rs/tui/tests/fixtures/
binary-size-log.jsonl, Apache-2.0, © OpenAI): every codex_event
exec_command_begin is a shell call the model made, its argv as codex
received it ("command"), and the matching exec_command_end its exit code.
The call's other arguments (workdir, timeout_ms) are not in the recording;
each call is replayed as {"command": ARGV}.
"""
import json, subprocess, sys

COMMIT = "c93e77b68b49562a46e7dc47b3eb529942e078b0"
PATH = "codex-rs/tui/tests/fixtures/binary-size-log.jsonl"
git = sys.argv[1]
text = subprocess.run(["git", "--git-dir", git, "show", f"{COMMIT}:{PATH}"], check=True, capture_output=True, text=True).stdout

calls, ends, model = [], {}, None
for line in text.splitlines():
    try:
        rec = json.loads(line)
    except ValueError:
        continue
    if rec.get("kind") == "session_start":
        model = model or rec.get("model")
    msg = (rec.get("payload") or {}).get("msg") if isinstance(rec.get("payload"), dict) else None
    if not isinstance(msg, dict):
        continue
    if msg.get("type") == "exec_command_begin":
        calls.append({"call_id": msg["call_id"], "name": "shell",
                      "arguments": json.dumps({"command": msg["command"]}, ensure_ascii=False)})
    elif msg.get("type") == "exec_command_end":
        ends[msg["call_id"]] = msg.get("exit_code")
for c in calls:
    c["exit_code"] = ends.get(c["call_id"])
json.dump([{"source": f"openai/codex@{COMMIT} {PATH} (codex's recording of a session with {model}, 2025-08-09)",
            "calls": calls}], sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
