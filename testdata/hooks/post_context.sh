#!/usr/bin/env bash
# PostToolUse: tell the model how the command ended (additionalContext), or
# complain on stderr with exit 2 when it failed.
input=$(cat)
case "$input" in
  *'"success":false'*) echo "the call failed; check the arguments" >&2; exit 2 ;;
esac
printf '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"post hook saw %s"}}\n' \
  "$(printf '%s' "$input" | sed -n 's/.*"tool_use_id":"\([^"]*\)".*/\1/p')"
