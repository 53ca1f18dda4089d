# heapwalk.py: how a running process's glibc heaps are used (issue 30, the demo's memory). Sourced
# by gdb attached to the process (glibc 2.35 with its debug info, as root for the pagemap):
#   gdb -batch -p PID -ex 'python OUT="/path.json"' -x benches/heapwalk.py
# Walks every chunk of every arena's heaps (the process is stopped while gdb is attached), marks
# fastbin and tcache chunks as free, reads /proc/PID/pagemap for which pages are resident, and
# writes per arena: bytes in use, free, resident, and how the in-use bytes spread over the
# resident pages (the gap between live data and resident set: fragmentation).
import gdb, struct, json, collections
inf = gdb.selected_inferior(); pid = inf.pid
PAGE = 4096; HEAP_MAX = 64 << 20
def u64(a): return struct.unpack('<Q', bytes(inf.read_memory(a, 8)))[0]
def ev(s): return int(gdb.parse_and_eval(s))
SZ_STATE = ev('sizeof(struct malloc_state)'); SZ_HI = ev('sizeof(heap_info)')
main = ev('&main_arena')
arenas = [main]; a = ev('main_arena.next')
while a != main: arenas.append(a); a = ev('((struct malloc_state*)%d)->next' % a)
# free chunks not in the normal bins: fastbins and every thread's tcache
extra_free = set()
for ar in arenas:
    for i in range(10):
        p = ev('((struct malloc_state*)%d)->fastbinsY[%d]' % (ar, i)); n = 0
        while p and n < 100000:
            extra_free.add(p); q = u64(p + 16); p = ((p + 16) >> 12) ^ q; n += 1
tcache_chunks = 0
for th in inf.threads():
    th.switch()
    try: tc = int(gdb.parse_and_eval('tcache'))
    except gdb.error: continue
    if not tc: continue
    for i in range(64):
        e = ev('((tcache_perthread_struct*)%d)->entries[%d]' % (tc, i)); n = 0
        while e and n < 1000:
            extra_free.add(e - 16); tcache_chunks += 1
            nxt = u64(e); e = (e >> 12) ^ nxt if nxt else 0; n += 1
def regions(ar):
    top = ev('((struct malloc_state*)%d)->top' % ar); topsz = u64(top + 8) & ~7
    if ar == main:
        return [(ev('(long)mp_.sbrk_base'), top + topsz)], top
    out = []; h = ar & ~(HEAP_MAX - 1)
    while h:
        size = u64(h + 16)
        start = ar + SZ_STATE if h == ar & ~(HEAP_MAX - 1) and ar - h < 4096 else h + SZ_HI
        start = (start + 15) & ~15
        end = top + topsz if h <= top < h + HEAP_MAX else h + size
        out.append((start, end)); h = u64(h + 8)
    return out, top
pm = open('/proc/%d/pagemap' % pid, 'rb')
def resident(lo, hi):
    first = lo // PAGE; n = (hi + PAGE - 1) // PAGE - first
    pm.seek(first * 8); raw = pm.read(n * 8)
    return {first + i for i in range(n) if struct.unpack_from('<Q', raw, i * 8)[0] >> 63}
report = []
for ar in arenas:
    regs, top = regions(ar)
    used = free = nused = nfree = 0
    used_on_page = collections.Counter(); chunks_on_page = collections.defaultdict(list)
    free_pages = set(); res_all = set(); free_by = collections.Counter(); top_free = 0; span = 0; sizes_used = collections.Counter()
    for lo, hi in regs:
        span += hi - lo
        mem = bytes(inf.read_memory(lo, hi - lo)); res_all |= resident(lo, hi)
        p = lo; prev = None
        while p + 16 <= hi:
            size = struct.unpack_from('<Q', mem, p - lo + 8)[0] & ~7
            if size < 16 or p + size > hi: break
            nxt = p + size
            inuse = (struct.unpack_from('<Q', mem, nxt - lo + 8)[0] & 1) if nxt + 16 <= hi else 0
            if p == top: inuse = 0
            if p in extra_free: inuse = 0
            if inuse:
                used += size; nused += 1; sizes_used[min(size, 1 << 20).bit_length()] += size
                for pg in range(p // PAGE, (p + size - 1) // PAGE + 1):
                    ov = min(p + size, (pg + 1) * PAGE) - max(p, pg * PAGE); used_on_page[pg] += ov
                    if size < PAGE: chunks_on_page[pg].append(size)
            else:
                free += size; nfree += 1; free_by[size.bit_length()] += size
                if p == top: top_free = size
                for pg in range((p + 16 + PAGE - 1) // PAGE, (p + size) // PAGE): free_pages.add(pg)
            if p == top: break
            p = nxt
    res_free = len(res_all & free_pages); res_used_pages = len(res_all - free_pages)
    dens = collections.Counter()
    for pg in res_all - free_pages:
        u = used_on_page.get(pg, 0); dens[min(4, u * 4 // PAGE)] += 1
    sparse = collections.Counter(); sparse_n = 0
    for pg in res_all - free_pages:
        if used_on_page.get(pg, 0) * 4 < PAGE and pg in chunks_on_page:
            sparse_n += 1
            for sz in chunks_on_page[pg]: sparse[sz.bit_length()] += 1
    report.append(dict(top_free=top_free, free_by_size_log2={str(k): v for k, v in sorted(free_by.items())}, sparse_pages=sparse_n, sparse_chunks_by_size_log2={str(k): v for k, v in sorted(sparse.items())},arena=hex(ar), span=span, resident=len(res_all) * PAGE, used=used, chunks_used=nused,
        free=free, chunks_free=nfree, resident_free_pages=res_free * PAGE, resident_pages_with_data=res_used_pages * PAGE,
        page_fill_quartiles={str(k): v for k, v in sorted(dens.items())},
        used_by_size_log2={str(k): v for k, v in sorted(sizes_used.items())}))
json.dump(dict(pid=pid, tcache_chunks=tcache_chunks, fast_or_tcache=len(extra_free), arenas=report), open(OUT, 'w'), indent=1)
