#!/usr/bin/env python3
# PreToolUse: refuse grep and find -name in shell commands (exit 2, reasons
# on stderr), as the validator of Claude Code's hook documentation does.
# Runs for Claude Code's "Bash" tool and toold's "run_command".
import json
import re
import sys

RULES = [
    (r"^grep\b(?!.*\|)", "Use 'rg' (ripgrep) instead of 'grep'"),
    (r"^find\s+\S+\s+-name\b", "Use 'rg --files -g PATTERN' instead of 'find -name'"),
]

try:
    event = json.load(sys.stdin)
except json.JSONDecodeError as err:
    print(f"bad hook input: {err}", file=sys.stderr)
    sys.exit(1)

if event.get("tool_name") not in ("Bash", "run_command"):
    sys.exit(0)
command = event.get("tool_input", {}).get("command", "")
problems = [msg for pattern, msg in RULES if re.search(pattern, command)]
if problems:
    for msg in problems:
        print(f"- {msg}", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
