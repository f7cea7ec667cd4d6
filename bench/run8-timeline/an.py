# an.py OUT.txt: per run_command true call of rec.sh's trace, the bash child's window
# (fork -> exit), its own CPU, its runnable wait, and the CPU toold, toolbench
# and other processes used meanwhile; toold's children against toolbench's.
# (branch run8; bench/profiles-2026-11-28-run8.md)
import re, sys, statistics as st
from collections import defaultdict
path = sys.argv[1]
skip = int(sys.argv[2]) if len(sys.argv) > 2 else 20
line_re = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')
ev = []
for l in open(path):
    m = line_re.match(l)
    if not m: continue
    comm, pid, tid, cpu, t, name, rest = m.groups()
    ev.append((float(t), int(cpu), comm, int(pid), int(tid), name, rest))
ev.sort(key=lambda e: e[0])
# process ids
tid2pid = {}
pidcomm = {}
for t, cpu, comm, pid, tid, name, rest in ev:
    tid2pid[tid] = pid
toolbench = {p for (t,c,comm,p,tid,n,r) in ev if comm == 'toolbench'}
toold = {p for (t,c,comm,p,tid,n,r) in ev if comm == 'toold'}
# children
kids = {}  # child pid -> dict
for t, cpu, comm, pid, tid, name, rest in ev:
    if name == 'sched:sched_process_fork':
        m = re.search(r'comm=(\S+) pid=(\d+) child_comm=(\S+) child_pid=(\d+)', rest)
        cp = int(m.group(4))
        kids[cp] = {'parent': pid, 'ptid': tid, 'F': t, 'pcomm': comm}

    elif name == 'sched:sched_process_exec':
        m = re.search(r'filename=(\S+) pid=(\d+)', rest)
        p = int(m.group(2))
        if p in kids: kids[p]['E'] = t; kids[p]['file'] = m.group(1)
    elif name == 'sched:sched_process_exit':
        m = re.search(r'pid=(\d+)', rest)
        p = int(m.group(1))
        if p in kids and 'X' not in kids[p]: kids[p]['X'] = t
    elif name == 'syscalls:sys_exit_clone3':
        v = int(rest.split()[-1], 16)
        if v in kids and kids[v]['ptid'] == tid: kids[v]['S'] = t
bash = {p: k for p, k in kids.items() if k.get('file', '').endswith('bash') and 'X' in k}
# build per-task on-cpu intervals and runnable waits
running = {}  # cpu -> (tid, since)
oncpu = defaultdict(list)  # tid -> [(a,b,cpu)]
wake = {}
waits = defaultdict(list)  # tid -> [(a,b)]
for t, cpu, comm, pid, tid, name, rest in ev:
    if name == 'sched:sched_switch':
        m = re.search(r'prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)', rest)
        prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
        if cpu in running:
            ptid, since = running[cpu]
            oncpu[ptid].append((since, t, cpu))
        running[cpu] = (nxt, t)
        if state.startswith('R'): wake[prev] = t
        if nxt in wake: waits[nxt].append((wake.pop(nxt), t))
    elif name in ('sched:sched_wakeup', 'sched:sched_wakeup_new'):
        m = re.search(r'pid=(\d+)', rest)
        w = int(m.group(1))
        if w not in wake: wake[w] = t
# pid of each tid via switch events: use comm events recorded
def overlap(iv, a, b):
    return sum(max(0, min(y, b) - max(x, a)) for x, y, *_ in iv)
def pidof(tid): return tid2pid.get(tid, tid)
rows = defaultdict(list)
for cp, k in sorted(bash.items(), key=lambda kv: kv[1]['F']):
    kind = 'toold' if k['parent'] in toold else ('bench' if k['parent'] in toolbench else None)
    if kind is None: continue
    a, b = k['F'], k['X']
    r = {'win': (b - a)*1e6, 'start': (k.get('S', a) - a)*1e6, 'post_exec_cpu': overlap(oncpu[cp], k['E'], b)*1e6, 'exec': (k['E'] - a)*1e6,
         'bash_cpu': overlap(oncpu[cp], a, b)*1e6, 'bash_wait': overlap(waits[cp], a, b)*1e6}
    same = defaultdict(float); other = defaultdict(float)
    for tid, iv in oncpu.items():
        if tid == cp or tid == 0: continue
        o = overlap(iv, a, b)*1e6
        if o <= 0: continue
        p = pidof(tid)
        if p in toold: same['toold'] += o
        elif p in toolbench: same['toolbench'] += o
        else: other['other'] += o
    r['toold_cpu'] = same['toold']; r['bench_cpu'] = same['toolbench']; r['other_cpu'] = other['other']
    # threads of toold that ran during the window
    r['toold_thr'] = len({tid for tid, iv in oncpu.items() if pidof(tid) in toold and overlap(iv, a, b) > 0})
    rows[kind].append(r)
for kind in ('toold', 'bench'):
    rs = rows[kind][skip:]
    if not rs: continue
    print(f"{kind}: n={len(rs)}")
    for key in ('win', 'start', 'exec', 'bash_cpu', 'post_exec_cpu', 'bash_wait', 'toold_cpu', 'bench_cpu', 'other_cpu', 'toold_thr'):
        v = [r[key] for r in rs]
        q = st.quantiles(v, n=4)
        print(f"  {key:10s} p25 {q[0]:7.0f}  p50 {st.median(v):7.0f}  p75 {q[2]:7.0f}  mean {st.mean(v):7.0f}")
