#!/usr/bin/env python3
"""bench/jobs/joblog.py — timings of one job from its log.

    atelier job logs JOB -o json | joblog.py CREATE_TIME_MS

Reads the API's {"lines": [...], "next": ...} (or one JSON line per log line,
as `-f -o json` prints) and prints one JSON object, every time in seconds
(null when the line is missing):

  first         FIRSTLINE <t> printed by the user code (its clock, epoch s)
  userend       USEREND <t> printed by the user code
  launch_s      create_time → the runner's "staged the code" line
  stage_s       "staged the code" → "staged the inputs" line (0 without inputs)
  stage_rep_s   the duration the runner reports in "staged the inputs: … in D"
  list_s, download_s, link_s   its parts, from "(list L, download D, link K)"
  spawn_s       "staged the inputs" (or code) → "started …" line
  exec_s        "started …" line → FIRSTLINE (sandbox and interpreter start)
  sync_rep_s    the duration in the last "synced the outputs …: … in D" line
  sync_line_s   USEREND → the time of that line
  cache_hits    N of "(N from the cache" in the staging line

Standard library only.
"""

import json
import re
import sys

DUR = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(s):
    """Seconds of a Go time.Duration string such as 1m2.5s, 180ms or 0s."""
    parts = DUR.findall(s)
    if not parts or "".join(n + u for n, u in parts) != s:
        return None
    return sum(float(n) * UNIT[u] for n, u in parts)


def lines(text):
    text = text.strip()
    if not text:
        return []
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and "lines" in doc:
            return doc["lines"] or []
        if isinstance(doc, dict):
            return [doc]
    except ValueError:
        pass
    return [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]


def parse(ls, created_ms):
    t = {}
    out = dict.fromkeys(["first", "userend", "launch_s", "stage_s", "stage_rep_s", "list_s", "download_s", "link_s", "spawn_s",
                         "exec_s", "sync_rep_s", "sync_line_s", "cache_hits"])
    for l in ls:
        text, ms, stream = l.get("text", ""), l.get("time", 0) / 1000.0, l.get("stream", "")
        if stream == "runner":
            if text.startswith("staged the code") and "code" not in t:
                t["code"] = ms
            elif text.startswith("staged the inputs") and "inputs" not in t:
                t["inputs"] = ms
                # "… in 1.2s" or "… in 1.2s (list 0.1s, download 1s, link 0.1s)"
                m = re.search(r" in (\S+?)(?: \(list (\S+), download (\S+), link (\S+)\))?$", text)
                if m:
                    out["stage_rep_s"] = go_duration(m.group(1))
                    if m.group(2):
                        out["list_s"], out["download_s"], out["link_s"] = (go_duration(x) for x in m.group(2, 3, 4))
                m = re.search(r"\((\d+) from the cache", text)
                if m:
                    out["cache_hits"] = int(m.group(1))
            elif text.startswith("started ") and "started" not in t:
                t["started"] = ms
            elif text.startswith("synced the outputs"):
                t["synced"] = ms
                m = re.search(r" in (\S+)$", text)
                if m:
                    out["sync_rep_s"] = go_duration(m.group(1))
        else:
            m = re.match(r"(FIRSTLINE|USEREND) (\d+\.\d+)", text)
            if m and m.group(1) == "FIRSTLINE" and out["first"] is None:
                out["first"] = float(m.group(2))
            elif m and m.group(1) == "USEREND":
                out["userend"] = float(m.group(2))

    def d(a, b):
        return None if a is None or b is None else round(b - a, 4)

    created = created_ms / 1000.0 if created_ms else None
    before_start = t.get("inputs", t.get("code"))
    out["launch_s"] = d(created, t.get("code"))
    out["stage_s"] = d(t.get("code"), t.get("inputs")) if "inputs" in t else (0.0 if "code" in t else None)
    out["spawn_s"] = d(before_start, t.get("started"))
    out["exec_s"] = d(t.get("started"), out["first"])
    out["sync_line_s"] = d(out["userend"], t.get("synced"))
    return out


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: atelier job logs JOB -o json | joblog.py CREATE_TIME_MS")
    created = int(float(argv[0])) if argv[0] not in ("", "null") else 0
    print(json.dumps(parse(lines(sys.stdin.read()), created)))


if __name__ == "__main__":
    main(sys.argv[1:])
