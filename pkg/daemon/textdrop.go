package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropStartupText unmaps, from toold's page tables, the pages of its
// executable's read-only mappings (text, rodata) that start-up faulted in:
// ~315 package initialisations, the registration of every tool and the
// runtime's walks of its tables touch regions spread over the whole 55 MB
// file, and the kernel maps each touch as a 64 KB fault-around window or a
// whole page-cache folio, so an idle toold had ~30 MB of its executable
// mapped of which it then used about half. What toold runs afterwards
// faults back in from the page cache (a minor fault per region, once).
//
// It frees no page-cache memory: the executable's pages stay cached, shared
// by every process that maps them, and are charged to the cgroup that read
// them as before. What changes is that the start-up's pages are no longer
// mapped by toold: its RSS (and PSS) is what it uses, and the kernel can
// reclaim the rest without first unmapping it. The kernel may drop clean
// text pages at any time under memory pressure on its own; this does the
// same once, at a known moment.
//
// Only mappings of the executable that are read-only and hold no anonymous
// (copied-on-write) page are dropped: MADV_DONTNEED on a private mapping
// discards written pages, and a dynamically linked build has its
// relocation-read-only data (written by the loader) among them.
func dropStartupText() (dropped int, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	type mapping struct{ lo, hi uintptr }
	var cands []mapping
	var cur *mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if strings.Contains(fs[0], "-") && len(fs) >= 5 {
			// A mapping's header: "lo-hi perms offset dev inode [path]".
			cur = nil
			if len(fs) < 6 || fs[5] != exe || (fs[1] != "r-xp" && fs[1] != "r--p") {
				continue
			}
			lo, hi, _ := strings.Cut(fs[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			cands = append(cands, mapping{uintptr(a), uintptr(b)})
			cur = &cands[len(cands)-1]
			continue
		}
		if cur != nil && fs[0] == "Anonymous:" && len(fs) >= 2 && fs[1] != "0" {
			// Written pages: never drop them.
			cands = cands[:len(cands)-1]
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	for _, m := range cands {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.lo, m.hi-m.lo, unix.MADV_DONTNEED); e != 0 {
			return dropped, e
		}
		dropped++
	}
	return dropped, nil
}
