#!/usr/bin/env python3
"""Which part of earshot each allocation of a heaptrack file belongs to (issue 30, the demo's memory).

    zstd -dc FILE.zst | grep -E '^[sita] ' | python3 benches/heaptrack_classes.py > MAP
    zstd -dc FILE.zst | mawk -v MAP=MAP -f benches/heaptrack_classlive.awk > LIVE

Reads the dictionary lines of a heaptrack data file (strings, instruction pointers, the trace tree,
allocation infos) and prints, per allocation info (hex, as the file's +/- lines name it), its class
and size: `sqlite` when SQLite allocates (a sqlite3* frame anywhere), else the part of the program of
the deepest earshot frame (`pane:inbox`, `core:receiver`, `emulator`, ...), else `other`.
heaptrack_classlive.awk then follows each class's live bytes through the run, per minute."""
import sys, re
strings = [None]; ips = [None]; traces = [(0, 0)]; allocs = []
for line in sys.stdin:
    k = line[0]
    if k == 's':
        _, _, rest = line.rstrip('\n').split(' ', 2) if line.count(' ') >= 2 else (None, None, '')
        strings.append(rest)
    elif k == 'i':
        f = line.split()[1:]
        funcs = []
        if len(f) > 2:
            funcs.append(int(f[2], 16))
            j = 5
            while j < len(f): funcs.append(int(f[j], 16)); j += 3
        ips.append(funcs)
    elif k == 't':
        _, ip, parent = line.split(); traces.append((int(ip, 16), int(parent, 16)))
    elif k == 'a':
        _, size, trace = line.split(); allocs.append((int(size, 16), int(trace, 16)))
def part(name):
    name = name.replace('..', '::')
    if name.startswith('sqlite3'): return 'sqlite'
    if 'earshot' not in name or 'heap_trim' in name: return None
    m = re.search(r'earshot::tui::panes::(\w+)', name)
    if m: return 'pane:' + m[1]
    if 'earshot_emulator' in name: return 'emulator'
    if 'earshot_demo' in name: return 'traffic'
    m = re.search(r'earshot_core::(\w+)', name)
    if m: return 'core:' + m[1]
    if 'earshot::tui' in name: return 'tui'
    return 'earshot-other'
memo = {}
def classify(t):
    seen = []; found = None; sql = False
    while t:
        if t in memo: break
        seen.append(t)
        ip, parent = traces[t]
        for fn in ips[ip] if ip < len(ips) else []:
            p = part(strings[fn]) if 0 < fn < len(strings) else None
            if p == 'sqlite': sql = True
            elif p and found is None: found = p
        t = parent
    if t and t in memo:
        s2, f2 = memo[t]; sql = sql or s2; found = found or f2
    for x in seen: memo[x] = (sql, found)
    return ('sqlite' if sql else found or 'other')
out = sys.stdout
for i, (size, trace) in enumerate(allocs):
    out.write(f'{i:x} {classify(trace)} {size}\n')
