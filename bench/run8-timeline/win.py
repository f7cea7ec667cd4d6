# win.py OUT.txt [N]: toold's system calls (with Go frames) inside each child's window,
# from rec2.sh's trace; N windows printed in full, then the counts per call.
import re, sys, statistics as st
from collections import defaultdict, Counter
path = sys.argv[1]; nshow = int(sys.argv[2]) if len(sys.argv) > 2 else 3
hdr = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')
ev = []; cur = None
for l in open(path):
    m = hdr.match(l)
    if m:
        comm, pid, tid, cpu, t, name, rest = m.groups()
        cur = [float(t), int(cpu), comm, int(pid), int(tid), name, rest, []]
        ev.append(cur); continue
    s = l.strip()
    if s and cur is not None:
        parts = s.split(None, 1)
        if len(parts) == 2: cur[7].append(parts[1])
ev.sort(key=lambda e: e[0])
NR = {0:'read',1:'write',3:'close',7:'poll',9:'mmap',11:'munmap',13:'rt_sigaction',14:'rt_sigprocmask',15:'rt_sigreturn',16:'ioctl',17:'pread',22:'pipe',24:'sched_yield',28:'madvise',32:'dup',33:'dup2',35:'nanosleep',39:'getpid',44:'sendto',45:'recvfrom',46:'sendmsg',47:'recvmsg',56:'clone',57:'fork',59:'execve',61:'wait4',62:'kill',72:'fcntl',79:'getcwd',89:'readlink',96:'gettimeofday',186:'gettid',200:'tkill',202:'futex',204:'sched_getaffinity',217:'getdents64',228:'clock_gettime',230:'clock_nanosleep',232:'epoll_wait',233:'epoll_ctl',234:'tgkill',247:'waitid',257:'openat',262:'newfstatat',263:'unlinkat',281:'epoll_pwait',290:'eventfd2',291:'epoll_create1',293:'pipe2',302:'prlimit64',424:'pidfd_send_signal',434:'pidfd_open',435:'clone3',439:'faccessat2',332:'statx',318:'getrandom',441:'epoll_pwait2',271:'ppoll'}
from collections import Counter as C_
_c = C_(e[3] for e in ev if e[2] == 'toold')
toold = {_c.most_common(1)[0][0]}
kids = {}
for t, cpu, comm, pid, tid, name, rest, cc in ev:
    if name == 'sched:sched_process_fork' and pid in toold:
        m = re.search(r'child_pid=(\d+)', rest); kids[int(m.group(1))] = {'F': t, 'ptid': tid}
    elif name == 'sched:sched_process_exec':
        m = re.search(r'filename=(\S+) pid=(\d+)', rest); p = int(m.group(2))
        if p in kids: kids[p]['E'] = t; kids[p]['file'] = m.group(1)
    elif name == 'sched:sched_process_exit':
        p = int(re.search(r'pid=(\d+)', rest).group(1))
        if p in kids and 'X' not in kids[p]: kids[p]['X'] = t
    elif name == 'syscalls:sys_exit_clone3':
        v = int(re.search(r'0x([0-9a-f]+)', rest).group(1), 16)
        if v in kids: kids[v]['S'] = t
bash = sorted([k for k in kids.values() if k.get('file','').endswith('bash') and 'X' in k], key=lambda k: k['F'])[40:]
SKIP = ('syscall_trace_enter','do_syscall_64','entry_SYSCALL','syscall.','internal/runtime/syscall','runtime.usleep','runtime.futex','runtime.raw','runtime.write1','runtime.read','internal/poll.ignoringEINTR','golang.org/x/sys/unix.','[unknown]','runtime.nanotime')
def frame(cc, n=4):
    out = []
    for f in cc:
        f = f.split('+')[0]
        if f.startswith(SKIP): continue
        out.append(f)
        if len(out) == n: break
    return ' < '.join(out)
sysc = Counter(); during = Counter(); per = []
k_i = 0
for i, k in enumerate(bash):
    a, b = k['F'], k['X']
    lst = [e for e in ev if a - 0.0 <= e[0] <= b and e[5] == 'raw_syscalls:sys_enter' and e[3] in toold]
    per.append(len(lst))
    for e in lst:
        nr = int(re.search(r'NR (\d+)', e[6]).group(1))
        during[(NR.get(nr, nr), frame(e[7]))] += 1
    if i < nshow:
        print(f"--- call {i}: window {1e6*(b-a):.0f} us, start returns +{1e6*(k.get('S',a)-a):.0f}, exec +{1e6*(k['E']-a):.0f}")
        for e in lst:
            nr = int(re.search(r'NR (\d+)', e[6]).group(1))
            print(f"  +{1e6*(e[0]-a):6.0f} tid {e[4]} cpu{e[1]} {str(NR.get(nr, nr)):16s} {frame(e[7])}")
print(f"windows {len(bash)}, toold syscalls in window: median {st.median(per)}")
for (nm, fr), c in during.most_common(40):
    print(f"  {c/len(bash):6.2f}/call  {str(nm):14s} {fr}")
