#!/usr/bin/env python3
"""Extracts every tool call of the trajectories SWE-agent publishes in its
repository into swe-agent.json (replayed by TestSessions).

Usage: extract_sweagent.py SWE_AGENT_GIT_DIR > swe-agent.json

Each session is one .traj file at the pinned commit; each call is the
model's response as SWE-agent received it (text format: thought, then the
command in a ``` block) or the function call it made (function-calling
trajectories: name and arguments from the history's tool_calls), with what
SWE-agent's window showed in the observation ([File: ...] header, the lines
above and below) when it showed one.
"""
import json, re, subprocess, sys

COMMIT = "3ea751c087f32b16e039a2233dd6eefecef325d5"
git = sys.argv[1]


def show(path):
    return subprocess.run(["git", "--git-dir", git, "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True).stdout


def window(obs):
    m = re.search(r"\[File: (.*) \((\d+) lines total\)\]", obs or "")
    if not m:
        return None
    w = {"lines": int(m.group(2))}
    a = re.search(r"^\((\d+) more lines above\)", obs, re.M)
    b = re.search(r"^\((\d+) more lines below\)", obs, re.M)
    w["above"] = int(a.group(1)) if a else 0
    w["below"] = int(b.group(1)) if b else 0
    first = re.search(r"^(\d+):", obs[m.end():], re.M)
    if first:
        w["first"] = int(first.group(1))
    return w


files = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", "--name-only", COMMIT], check=True, capture_output=True, text=True).stdout.split()
sessions = []
for f in sorted(files):
    if not f.endswith(".traj"):
        continue
    d = json.loads(show(f))
    calls = []
    fc = [m for m in d.get("history", []) if m.get("role") == "assistant" and m.get("tool_calls")]
    steps = d.get("trajectory", [])
    if fc:
        obs = [s.get("observation") for s in steps]
        for i, m in enumerate(fc):
            for tc in m["tool_calls"]:
                c = {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}
                if isinstance(c["arguments"], dict):
                    c["arguments"] = json.dumps(c["arguments"])
                w = window(obs[i]) if i < len(obs) else None
                if w:
                    c["window"] = w
                calls.append(c)
    else:
        for s in steps:
            c = {"response": s.get("response") or "", "action": s.get("action") or ""}
            w = window(s.get("observation"))
            if w:
                c["window"] = w
            calls.append(c)
    if calls:
        sessions.append({"source": f"SWE-agent/SWE-agent@{COMMIT} {f}", "calls": calls})
json.dump(sessions, sys.stdout, indent=1, ensure_ascii=False)
print()
