"""A strict check of a metrics exposition, standard library only.

Usage: python3 metrics_check.py openmetrics|prometheus < exposition

Checks the text line by line against the OpenMetrics 1.0 text format or
the Prometheus text format 0.0.4: descriptor lines (HELP, TYPE, and in
OpenMetrics UNIT) once per family, before its samples, families never
interleaved; metric and label names; label values quoted and escaped; each
sample's name allowed for its family's type (counter `_total`, histogram
`_bucket`/`_sum`/`_count`); no series twice; counters not negative;
histogram buckets cumulative up to `+Inf`, which equals `_count`; an
OpenMetrics unit a suffix of its family's name and `# EOF` last.

On success prints one JSON object: {"samples": {series: value},
"types": {family: type}}, the series as written (`name{a="b"}`). On the
first violation prints it on stderr and exits 1.
"""

import json
import math
import re
import sys

METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

TYPES = {
    "openmetrics": {
        "counter": ["_total", "_created"],
        "gauge": [""],
        "histogram": ["_bucket", "_sum", "_count", "_created"],
        "gaugehistogram": ["_bucket", "_gsum", "_gcount"],
        "summary": ["", "_sum", "_count", "_created"],
        "info": ["_info"],
        "stateset": [""],
        "unknown": [""],
    },
    "prometheus": {
        "counter": [""],
        "gauge": [""],
        "histogram": ["_bucket", "_sum", "_count"],
        "summary": ["", "_sum", "_count"],
        "untyped": [""],
    },
}


def fail(number, line, why):
    sys.stderr.write("line %d: %s\n  %r\n" % (number, why, line))
    sys.exit(1)


def parse_value(text):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.fullmatch(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)", text):
        raise ValueError(text)
    return float(text)


def parse_labels(text, start, number, line):
    """Labels from text[start] == '{'; returns (pairs, index after '}')."""
    pairs = []
    i = start + 1
    while True:
        if i < len(text) and text[i] == "}":
            return pairs, i + 1
        match = LABEL.match(text, i)
        if not match:
            fail(number, line, "a label name was expected at column %d" % i)
        name = match.group(0)
        i = match.end()
        if text[i : i + 2] != '="':
            fail(number, line, 'a label needs ="value"')
        i += 2
        value = []
        while True:
            if i >= len(text):
                fail(number, line, "a label value is not closed")
            char = text[i]
            if char == "\\":
                escaped = text[i + 1 : i + 2]
                if escaped not in ("\\", '"', "n"):
                    fail(number, line, "bad escape \\%s in a label value" % escaped)
                value.append("\n" if escaped == "n" else escaped)
                i += 2
            elif char == '"':
                i += 1
                break
            elif char == "\n":
                fail(number, line, "a raw newline in a label value")
            else:
                value.append(char)
                i += 1
        if any(existing == name for existing, _ in pairs):
            fail(number, line, "label %s given twice" % name)
        if name.startswith("__"):
            fail(number, line, "label names starting with __ are reserved")
        pairs.append((name, "".join(value)))
        if text[i : i + 1] == ",":
            i += 1
            if text[i : i + 1] == "}":
                fail(number, line, "a trailing comma in the labels")
        elif text[i : i + 1] != "}":
            fail(number, line, "a label set must end with }")


def check(text, mode):
    types = TYPES[mode]
    if not text.endswith("\n"):
        fail(0, text[-40:], "the exposition must end with a newline")
    lines = text[:-1].split("\n")
    if mode == "openmetrics":
        if lines[-1] != "# EOF":
            fail(len(lines), lines[-1], "OpenMetrics ends with # EOF")
        lines = lines[:-1]
    samples = {}
    family_types = {}
    families_done = set()
    current = None  # (name, type)
    seen_descriptors = set()
    units = {}
    histograms = {}  # (family, labels without le) -> {"buckets": [(le, v)], "count": v}
    for number, line in enumerate(lines, 1):
        if line == "":
            fail(number, line, "an empty line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) < 3 or parts[0] != "#":
                fail(number, line, "a comment must be # KIND name ...")
            kind, name = parts[1], parts[2]
            if kind == "EOF":
                fail(number, line, "# EOF before the end")
            if kind not in ("HELP", "TYPE") + (("UNIT",) if mode == "openmetrics" else ()):
                fail(number, line, "unknown descriptor %s" % kind)
            if not METRIC.fullmatch(name):
                fail(number, line, "bad metric name %r" % name)
            if current is None or current[0] != name:
                if name in families_done:
                    fail(number, line, "family %s is split" % name)
                if current is not None:
                    families_done.add(current[0])
                current = (name, None)
            if (name, kind) in seen_descriptors:
                fail(number, line, "a second %s for %s" % (kind, name))
            seen_descriptors.add((name, kind))
            rest = parts[3] if len(parts) == 4 else ""
            if kind == "HELP":
                if not rest.strip():
                    fail(number, line, "empty HELP")
                if re.search(r"\\[^\\n\"]", rest) and mode == "openmetrics":
                    fail(number, line, "bad escape in HELP")
            elif kind == "TYPE":
                if rest not in types:
                    fail(number, line, "type %r is not one of %s" % (rest, sorted(types)))
                current = (name, rest)
                family_types[name] = rest
            elif kind == "UNIT":
                if not re.fullmatch(r"[a-zA-Z0-9_:]+", rest) or not name.endswith("_" + rest):
                    fail(number, line, "the unit %r must end the family name" % rest)
                units[name] = rest
            continue
        match = METRIC.match(line)
        if not match:
            fail(number, line, "a sample must start with a metric name")
        name = match.group(0)
        i = match.end()
        labels = []
        if line[i : i + 1] == "{":
            labels, i = parse_labels(line, i, number, line)
        if line[i : i + 1] != " ":
            fail(number, line, "one space must follow the name and labels")
        fields = line[i + 1 :].split(" ")
        if len(fields) not in (1, 2) or fields[0] == "":
            fail(number, line, "a sample is a value and at most a timestamp")
        try:
            value = parse_value(fields[0])
        except ValueError:
            fail(number, line, "bad value %r" % fields[0])
        if current is None or current[1] is None:
            fail(number, line, "a sample before its family's TYPE")
        family, family_type = current
        suffix = name[len(family) :] if name.startswith(family) else None
        if suffix is None or suffix not in types[family_type]:
            fail(number, line, "%s is not a sample name of the %s %s" % (name, family_type, family))
        series = name
        if labels:
            series += "{" + ",".join('%s="%s"' % (k, v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")) for k, v in labels) + "}"
        if series in samples:
            fail(number, line, "series %s given twice" % series)
        samples[series] = value
        if family_type == "counter" and (math.isnan(value) or value < 0):
            fail(number, line, "a counter must not be negative or NaN")
        if family_type == "histogram":
            others = tuple((k, v) for k, v in labels if k != "le")
            entry = histograms.setdefault((family, others), {"buckets": [], "count": None})
            if suffix == "_bucket":
                le = [v for k, v in labels if k == "le"]
                if len(le) != 1:
                    fail(number, line, "a bucket needs one le label")
                try:
                    bound = parse_value(le[0])
                except ValueError:
                    fail(number, line, "bad le %r" % le[0])
                entry["buckets"].append((bound, value, number, line))
            elif suffix == "_count":
                entry["count"] = value
            elif suffix == "_sum" and value < 0:
                fail(number, line, "a histogram sum of durations must not be negative")
    for (family, _), entry in histograms.items():
        buckets = entry["buckets"]
        if not buckets:
            fail(0, family, "a histogram without buckets")
        bounds = [b[0] for b in buckets]
        if bounds != sorted(bounds) or len(set(bounds)) != len(bounds):
            fail(buckets[0][2], buckets[0][3], "buckets must go up by le, once each")
        if bounds[-1] != math.inf:
            fail(buckets[-1][2], buckets[-1][3], "the last bucket must be le=+Inf")
        counts = [b[1] for b in buckets]
        if counts != sorted(counts):
            fail(buckets[0][2], buckets[0][3], "bucket counts must be cumulative")
        if entry["count"] is not None and entry["count"] != counts[-1]:
            fail(buckets[-1][2], buckets[-1][3], "_count must equal the +Inf bucket")
    for name, unit in units.items():
        if name not in family_types:
            fail(0, name, "UNIT for a family without TYPE")
    shown = {k: (v if math.isfinite(v) else str(v)) for k, v in samples.items()}
    return {"samples": shown, "types": family_types}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TYPES:
        sys.stderr.write("usage: metrics_check.py openmetrics|prometheus < exposition\n")
        sys.exit(2)
    result = check(sys.stdin.read(), sys.argv[1])
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
