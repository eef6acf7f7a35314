#!/usr/bin/env python3
"""bench/jobs/gendata.py — the input data set of the jobs benchmark.

    gendata.py DIR [--files 2000] [--bytes 52428800] [--dirs 20] [--seed 4]

Writes FILES files totalling exactly BYTES bytes into DIR, spread over DIRS
sub-directories (class_00/, class_01/, … like an image-classification data
set). Sizes vary around the mean (log-normal, sigma 0.6, each at least
1 KiB) and the contents are pseudo-random (incompressible); both come from a
fixed seed, so every run writes the same files. Prints one JSON line:
{"dir", "files", "bytes", "min", "max", "seed"}. Standard library only.
"""

import argparse
import json
import os
import random
import sys


def sizes(n, total, rng):
    """n sizes >= 1 KiB summing to total, log-normally spread around total/n."""
    floor = 1024
    if n * floor > total:
        raise SystemExit(f"gendata: {n} files of at least {floor} bytes do not fit in {total} bytes")
    raw = [rng.lognormvariate(0.0, 0.6) for _ in range(n)]
    spare = total - n * floor
    scale = spare / sum(raw)
    out = [floor + int(r * scale) for r in raw]
    # integer rounding: hand the remainder out one byte at a time
    rest = total - sum(out)
    for i in range(rest):
        out[i % n] += 1
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--bytes", type=int, default=50 * 1024 * 1024)
    p.add_argument("--dirs", type=int, default=20)
    p.add_argument("--seed", type=int, default=4)
    a = p.parse_args(argv)
    if a.files < 1 or a.dirs < 1:
        raise SystemExit("gendata: --files and --dirs must be at least 1")
    rng = random.Random(a.seed)
    sz = sizes(a.files, a.bytes, rng)
    os.makedirs(a.dir, exist_ok=True)
    for i, s in enumerate(sz):
        d = os.path.join(a.dir, f"class_{i % a.dirs:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"img_{i:05d}.bin"), "wb") as f:
            f.write(rng.randbytes(s))
    print(json.dumps({"dir": a.dir, "files": a.files, "bytes": sum(sz),
                      "min": min(sz), "max": max(sz), "seed": a.seed}))


if __name__ == "__main__":
    main(sys.argv[1:])
