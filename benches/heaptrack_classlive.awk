# heaptrack_classlive.awk -v MAP=FILE (the lines of a heaptrack data file on stdin): the live bytes
# of each class of benches/heaptrack_classes.py through the run; per minute of the run, one line per
# class: minute, class, mean and peak of its live bytes (sampled at each of heaptrack's timestamps,
# every 10 ms), TOTAL for all. A process killed with SIGKILL leaves what was live at the kill.
BEGIN { while ((getline l < MAP) > 0) { split(l, f, " "); cls[f[1]] = f[2]; sz[f[1]] = f[3]; names[f[2]] = 1 } }
$1 == "+" { c = cls[$2]; cur[c] += sz[$2]; next }
$1 == "-" { c = cls[$2]; cur[c] -= sz[$2]; next }
$1 == "c" { t = hex($2) / 1000; m = int(t / 60)
  if (m != lastm && n > 0) { flush() }
  lastm = m; n++; tot = 0
  for (c in names) { s[c] += cur[c]; if (cur[c] > pk[c]) pk[c] = cur[c]; tot += cur[c] }
  s["TOTAL"] += tot; if (tot > pk["TOTAL"]) pk["TOTAL"] = tot }
function flush(   c) { for (c in s) printf "%d %s %.0f %.0f\n", lastm, c, s[c] / n, pk[c]; delete s; delete pk; n = 0 }
END { flush() }
function hex(h,   i, v) { v = 0; for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1; return v }
