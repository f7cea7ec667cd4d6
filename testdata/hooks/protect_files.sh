#!/usr/bin/env bash
# PreToolUse: refuse writes to .env files, lock files and .git/ (exit 2 with
# the reason on stderr), like the file-protection example of Claude Code's
# hook guide; the path is read from tool_input.file_path (Claude Code) or
# tool_input.path (toold). Plain bash, no jq.
input=$(cat)
path=$(printf '%s' "$input" | sed -n 's/.*"\(file_path\|path\)": *"\([^"]*\)".*/\2/p')
case "$path" in
  *.env|*package-lock.json|*.git/*)
    echo "refusing to touch protected file $path" >&2
    exit 2 ;;
esac
exit 0
