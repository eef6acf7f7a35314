"""atelier.report: the metrics file format and validation."""

import contextlib
import io
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import unittest
from fractions import Fraction
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import atelier  # noqa: E402


def _report_many(path, n, worker):
    os.environ["ATELIER_METRICS_FILE"] = path
    for i in range(n):
        atelier.report(step=i, **{"w%d" % worker: float(i), "pad": 1.0})


class ReportTests(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="atelier-")
        self.addCleanup(shutil.rmtree, self.d, True)
        self.path = os.path.join(self.d, "metrics.jsonl")
        self.saved = os.environ.get("ATELIER_METRICS_FILE")
        os.environ["ATELIER_METRICS_FILE"] = self.path

    def tearDown(self):
        if self.saved is None:
            os.environ.pop("ATELIER_METRICS_FILE", None)
        else:
            os.environ["ATELIER_METRICS_FILE"] = self.saved

    def lines(self):
        with open(self.path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def test_format(self):
        before = int(time.time() * 1000)
        atelier.report(step=3, loss=0.25, acc=1)
        atelier.report(lr=Fraction(1, 4), **{"train/loss": Decimal("0.5"), "名": 2})
        after = int(time.time() * 1000)
        a, b = self.lines()
        self.assertEqual(set(a), {"time", "step", "values"})
        self.assertTrue(before <= a["time"] <= after)
        self.assertIsInstance(a["time"], int)
        self.assertEqual(a["step"], 3)
        self.assertEqual(a["values"], {"loss": 0.25, "acc": 1.0})
        self.assertIsInstance(a["values"]["acc"], float)
        self.assertIsNone(b["step"])
        self.assertEqual(b["values"], {"lr": 0.25, "train/loss": 0.5, "名": 2.0})
        with open(self.path, "rb") as f:
            raw = f.read()
        self.assertTrue(raw.endswith(b"\n"))
        self.assertEqual(raw.count(b"\n"), 2)

    def test_step_forms(self):
        class Index:
            def __index__(self):
                return 7
        atelier.report(step=Index(), x=1)
        atelier.report(step=8.0, x=1)
        self.assertEqual([line["step"] for line in self.lines()], [7, 8])

    def test_number_like_objects(self):
        class Tensor:  # a one-element tensor: float() works
            def __float__(self):
                return 1.5
        atelier.report(t=Tensor())
        self.assertEqual(self.lines()[0]["values"], {"t": 1.5})

    def test_validation(self):
        cases = [
            (TypeError, {"loss": "0.5"}, "loss"),
            (TypeError, {"flag": True}, "flag"),
            (TypeError, {"v": None}, "v"),
            (TypeError, {"v": [1.0]}, "v"),
            (ValueError, {"loss": float("nan")}, "loss"),
            (ValueError, {"acc": float("inf")}, "acc"),
            (ValueError, {"big": -float("inf")}, "big"),
        ]
        for exc, metrics, name in cases:
            with self.assertRaises(exc, msg=metrics) as cm:
                atelier.report(step=1, **metrics)
            self.assertIn(repr(name), str(cm.exception))

        class Bad:
            def __float__(self):
                raise ValueError("only one element tensors can be converted")
        with self.assertRaises(TypeError) as cm:
            atelier.report(t=Bad())
        self.assertIn("'t'", str(cm.exception))
        with self.assertRaises(ValueError):
            atelier.report(step=1)
        with self.assertRaises(TypeError):
            atelier.report(step="1", x=1)
        with self.assertRaises(TypeError):
            atelier.report(step=1.5, x=1)
        with self.assertRaises(TypeError):
            atelier.report(step=True, x=1)
        self.assertFalse(os.path.exists(self.path))  # nothing half-written

    def test_no_metrics_file_prints(self):
        del os.environ["ATELIER_METRICS_FILE"]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            atelier.report(step=2, loss=0.5)
            atelier.report(acc=1)
        self.assertEqual(err.getvalue(), "atelier.report: step=2 loss=0.5\natelier.report: acc=1.0\n")
        self.assertFalse(os.path.exists(self.path))

    def test_concurrent_writers_keep_lines_whole(self):
        ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing
        procs = [ctx.Process(target=_report_many, args=(self.path, 200, w)) for w in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            self.assertEqual(p.exitcode, 0)
        lines = self.lines()
        self.assertEqual(len(lines), 800)
        for w in range(4):
            self.assertEqual([line["step"] for line in lines if "w%d" % w in line["values"]], list(range(200)))

    def test_creates_the_directory(self):
        os.environ["ATELIER_METRICS_FILE"] = os.path.join(self.d, "log", "m.jsonl")
        atelier.report(x=1)
        with open(os.path.join(self.d, "log", "m.jsonl")) as f:
            self.assertEqual(json.loads(f.read())["values"], {"x": 1.0})

    def test_version(self):
        self.assertRegex(atelier.__version__, r"^\d+\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main()
