"""Atelier's in-job SDK.

atelier.report(step=None, **metrics) records training metrics. Inside an
Atelier job each call appends one JSON line

    {"time": <epoch ms>, "step": <int or null>, "values": {"name": number, ...}}

to the file named by $ATELIER_METRICS_FILE, which the job's runner follows
and sends to the server (see `atelier job metrics`). Outside a job (the
variable unset) the metrics are printed to stderr instead, so the same
script runs anywhere. Only the Python standard library is used.
"""

import json
import math
import os
import sys
import time

__version__ = "1.0.0"

__all__ = ["report", "__version__"]

METRICS_FILE_ENV = "ATELIER_METRICS_FILE"


def _number(name, value):
    if isinstance(value, bool) or isinstance(value, (str, bytes, bytearray)):
        raise TypeError("atelier.report: metric %r must be a number, not %s" % (name, type(value).__name__))
    if not hasattr(type(value), "__float__"):
        raise TypeError("atelier.report: metric %r must be a number, not %s" % (name, type(value).__name__))
    try:
        f = float(value)
    except (TypeError, ValueError) as e:
        # e.g. a tensor with more than one element
        raise TypeError("atelier.report: metric %r must be a single number, not %s (%s)" % (
            name, type(value).__name__, e)) from None
    if not math.isfinite(f):
        raise ValueError("atelier.report: metric %r is %r; only finite numbers can be reported" % (name, f))
    return f


def _step(step):
    if step is None:
        return None
    if isinstance(step, bool):
        raise TypeError("atelier.report: step must be an int or None, not bool")
    if hasattr(type(step), "__index__"):
        return int(step.__index__())
    if isinstance(step, float) and step.is_integer():
        return int(step)
    raise TypeError("atelier.report: step must be an int or None, not %s (%r)" % (type(step).__name__, step))


def report(step=None, **metrics):
    """Record one sample of named metrics, e.g. report(step=10, loss=0.3, acc=0.91).

    Values must be finite numbers (int, float, or anything float() takes
    without parsing text, such as numpy scalars or one-element tensors);
    step is an int or None. Raises TypeError or ValueError naming the
    offending metric, and ValueError when no metric is given."""
    if not metrics:
        raise ValueError("atelier.report: give at least one metric, e.g. report(step=1, loss=0.5)")
    s = _step(step)
    values = {}
    for name, value in metrics.items():
        if not name:
            raise ValueError("atelier.report: a metric name must not be empty")
        values[name] = _number(name, value)
    path = os.environ.get(METRICS_FILE_ENV)
    if not path:
        shown = " ".join("%s=%s" % (k, v) for k, v in values.items())
        if s is not None:
            shown = "step=%d %s" % (s, shown)
        print("atelier.report: " + shown, file=sys.stderr, flush=True)
        return
    line = json.dumps({"time": int(time.time() * 1000), "step": s, "values": values},
                      ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    data = line.encode("utf-8")
    # One write(2) on an O_APPEND descriptor: the line lands whole at the end
    # even when other processes (data loader workers, ranks) report too.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
