# delay.py OUT.txt: what ran on the bash child's CPU while it waited runnable.
# who runs on the CPUs while a bash child waits runnable (attribution of bash's delay)
import re, sys, statistics as st
from collections import defaultdict, Counter
path = sys.argv[1]
hdr = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')
ev = []
for l in open(path):
    m = hdr.match(l)
    if m:
        comm, pid, tid, cpu, t, name, rest = m.groups()
        ev.append((float(t), int(cpu), comm, int(pid), int(tid), name, rest))
ev.sort(key=lambda e: e[0])
tid2pid = {}; tidcomm = {}
for e in ev: tid2pid[e[4]] = e[3]
c = Counter(e[3] for e in ev if e[2] == 'toold'); TOOLD = c.most_common(1)[0][0]
c = Counter(e[3] for e in ev if e[2] == 'toolbench'); BENCH = c.most_common(1)[0][0]
kids = {}
for t, cpu, comm, pid, tid, name, rest in ev:
    if name == 'sched:sched_process_fork' and pid in (TOOLD, BENCH):
        kids[int(re.search(r'child_pid=(\d+)', rest).group(1))] = {'F': t, 'par': pid}
    elif name == 'sched:sched_process_exec':
        m = re.search(r'filename=(\S+) pid=(\d+)', rest); p = int(m.group(2))
        if p in kids: kids[p]['file'] = m.group(1); kids[p]['E'] = t
    elif name == 'sched:sched_process_exit':
        p = int(re.search(r'pid=(\d+)', rest).group(1))
        if p in kids and 'X' not in kids[p]: kids[p]['X'] = t
bash = {p: k for p, k in kids.items() if k.get('file', '').endswith('bash') and 'X' in k}
# timeline per cpu: list of (start, end, tid)
running = {}; segs = defaultdict(list); waitstart = {}; waits = defaultdict(list)
for t, cpu, comm, pid, tid, name, rest in ev:
    if name == 'sched:sched_switch':
        m = re.search(r'prev_comm=(.*) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)', rest)
        prev, state, nxt = int(m.group(2)), m.group(3), int(m.group(5))
        tidcomm[prev] = m.group(1); tidcomm[nxt] = m.group(4)
        if cpu in running: segs[cpu].append((running[cpu][1], t, running[cpu][0]))
        running[cpu] = (nxt, t)
        if state.startswith('R') and prev in bash: waitstart[prev] = (t, 'preempted')
        if nxt in waitstart: 
            a, why = waitstart.pop(nxt); waits[nxt].append((a, t, why, cpu))
    elif name in ('sched:sched_wakeup', 'sched:sched_wakeup_new'):
        w = int(re.search(r' pid=(\d+)', rest).group(1))
        if w in bash and w not in waitstart: waitstart[w] = (t, 'woken' if name.endswith('wakeup') else 'new')
def who(tid):
    if tid == 0: return 'idle'
    p = tid2pid.get(tid)
    if p == TOOLD: return 'toold'
    if p == BENCH: return 'toolbench'
    if tid in bash: return 'bash(self)'
    return 'other:' + tidcomm.get(tid, '?')
res = {'toold': [], 'bench': []}
for p, k in bash.items():
    kind = 'toold' if k['par'] == TOOLD else 'bench'
    tot = Counter(); onmycpu = Counter(); n = Counter()
    for a, b, why, cpu in waits[p]:
        if a < k['F'] or b > k['X'] + 1e-3: continue
        n[why] += 1
        for cc in segs:
            for s, e, tid in segs[cc]:
                o = min(b, e) - max(a, s)
                if o > 0:
                    w = who(tid)
                    if cc == cpu: onmycpu[w.split(':')[0]] += o * 1e6
    res[kind].append((onmycpu, n))
for kind, rs in res.items():
    rs = rs[40:]
    print(kind, len(rs))
    keys = set(); [keys.update(r[0]) for r in rs]
    for key in sorted(keys):
        v = [r[0].get(key, 0) for r in rs]
        print(f"   on bash's cpu while it waits: {key:12s} mean {st.mean(v):6.0f} us  p50 {st.median(v):5.0f}")
    ks = set(); [ks.update(r[1]) for r in rs]
    for key in ks: print(f"   waits of kind {key}: {st.mean([r[1].get(key,0) for r in rs]):.2f}/call")

