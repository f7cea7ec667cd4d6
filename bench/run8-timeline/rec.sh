#!/bin/bash
# usage: rec.sh BINDIR OUT  — perf-records one run row of toolbench
B=$1; O=$2
cd "$(git rev-parse --show-toplevel)"
flock /tmp/toolbench.lock perf record -q -a -o $O.data \
 -e sched:sched_switch,sched:sched_wakeup,sched:sched_wakeup_new,sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit,syscalls:sys_enter_clone3,syscalls:sys_exit_clone3,syscalls:sys_exit_waitid,syscalls:sys_exit_wait4 \
 -- $B/toolbench -toold $B/toold -rows '^run$' -md $O.md > $O.log 2>&1
perf script -i $O.data -F comm,pid,tid,cpu,time,event,trace > $O.txt 2>/dev/null
grep -o 'overhead [0-9.]* [mµ]s' $O.md; uptime
