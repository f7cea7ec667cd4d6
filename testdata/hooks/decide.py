#!/usr/bin/env python3
# PreToolUse with a JSON answer (hookSpecificOutput): deny paths holding
# "secret", ask about paths holding "maybe", allow documentation files with
# added context, and cap "limit" at 100 through updatedInput.
import json
import sys

event = json.load(sys.stdin)
args = event.get("tool_input", {})
path = args.get("path") or args.get("file_path") or ""
out = {"hookEventName": "PreToolUse"}
if "secret" in path:
    out.update(permissionDecision="deny", permissionDecisionReason=f"{path} holds secrets; read the .example file instead")
elif "maybe" in path:
    out.update(permissionDecision="ask", permissionDecisionReason=f"is {path} fine to read?")
elif path.endswith((".md", ".txt")):
    out.update(permissionDecision="allow", permissionDecisionReason="documentation", additionalContext="docs are public")
if isinstance(args.get("limit"), int) and args["limit"] > 100:
    args = dict(args, limit=100)
    out["updatedInput"] = args
print(json.dumps({"hookSpecificOutput": out, "systemMessage": f"checked {event['tool_name']} for {event['session_id']}"}))
