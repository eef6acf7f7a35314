"""atelier.nbrun: a notebook run headless as a job's boot file, with its
parameters cell filled from the job's arguments."""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from atelier import nbrun  # noqa: E402
from need import need_if  # noqa: E402

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

MISSING = [m for m in ("nbformat", "nbclient", "ipykernel") if importlib.util.find_spec(m) is None]
NEEDS = "notebooks need %s (Debian python3-nbclient python3-nbconvert python3-ipykernel)" % ", ".join(MISSING)


def code(source, tags=None):
    c = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    if tags:
        c["metadata"]["tags"] = tags
    return c


def notebook(*cells):
    return {"cells": list(cells), "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


class ParseTests(unittest.TestCase):
    def test_values(self):
        for raw, want in [("5", 5), ("0.1", 0.1), ("-3", -3), ("True", True), ("false", False), ("None", None),
                          ("[1, 2]", [1, 2]), ("{'a': 1}", {"a": 1}), ("'quoted'", "quoted"), ("hello", "hello"),
                          ("/home/ma-user/modelarts/inputs/data_url_0/", "/home/ma-user/modelarts/inputs/data_url_0/"),
                          ("1e-3", 0.001), ("__import__('os')", "__import__('os')"), ("", ""), ("a b", "a b")]:
            self.assertEqual(nbrun.parse_value(raw), want, raw)

    def test_params(self):
        got = nbrun.parse_params(["--epochs=3", "--learning-rate=0.1", "--epochs=4", "--x", "positional",
                                  "--class=1", "--1bad=2", "--note=a=b"])
        self.assertEqual(got, [("epochs", 4), ("learning_rate", 0.1), ("note", "a=b")])

    def test_source_is_python(self):
        src = nbrun.parameters_source([("a", 1), ("s", "it's \"q\"\n--x"), ("l", [1, "2"])])
        ns = {}
        exec(src, ns)
        self.assertEqual((ns["a"], ns["s"], ns["l"]), (1, "it's \"q\"\n--x", [1, "2"]))


@need_if(MISSING, NEEDS)
class RunTests(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="nbrun-")
        self.addCleanup(shutil.rmtree, self.d, True)
        self.out = os.path.join(self.d, "out")

    def write(self, name, nb):
        p = os.path.join(self.d, name)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(nb, f)
        return p

    def run_nb(self, path, *args, timeout=120):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        return subprocess.run([sys.executable, "-m", "atelier.nbrun", path, "--output-dir", self.out, "--"] + list(args),
                              capture_output=True, text=True, timeout=timeout, env=env, cwd="/")

    def executed(self, name):
        with open(os.path.join(self.out, name + ".executed.ipynb"), encoding="utf-8") as f:
            return json.load(f)

    def test_parameters_injected(self):
        p = self.write("exp.ipynb", notebook(
            code("import os\nprint('cwd', os.getcwd())"),
            code("epochs = 1\nlr = 0.5\nname = 'default'", tags=["parameters"]),
            code("print('epochs', epochs, type(epochs).__name__, 'lr', lr, 'name', name, 'data', data_url)"),
            code("epochs * 7"),
            code("stale = True", tags=["injected-parameters"]),
        ))
        r = self.run_nb(p, "--epochs=3", "--name=run-1", "--data_url=/data/x/")
        self.assertEqual(r.returncode, 0, r.stderr)
        # Outputs stream to the log as they come.
        self.assertIn("cwd " + self.d, r.stdout)
        self.assertIn("epochs 3 int lr 0.5 name run-1 data /data/x/", r.stdout)
        self.assertIn("21", r.stdout)
        self.assertIn("[cell 5/5]", r.stderr)
        self.assertNotIn("Warning", r.stderr)
        nb = self.executed("exp")
        tags = [c["metadata"].get("tags", []) for c in nb["cells"]]
        self.assertEqual(tags, [[], ["parameters"], ["injected-parameters"], [], []])
        src = "".join(nb["cells"][2]["source"])
        self.assertIn("epochs = 3\n", src)
        self.assertIn("name = 'run-1'\n", src)
        self.assertIn("data_url = '/data/x/'\n", src)
        self.assertEqual("".join(nb["cells"][4]["outputs"][0]["data"]["text/plain"]), "21")

    def test_no_parameters_cell(self):
        p = self.write("plain.ipynb", notebook(code("print(x + 1)")))
        r = self.run_nb(p, "--x=41")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("42", r.stdout)
        self.assertIn('no cell is tagged "parameters"', r.stderr)
        self.assertEqual(self.executed("plain")["cells"][0]["metadata"]["tags"], ["injected-parameters"])

    def test_failure(self):
        p = self.write("bad.ipynb", notebook(code("print('before')"), code("import no_such_module_xyz"), code("print('after')")))
        r = self.run_nb(p)
        self.assertEqual(r.returncode, 1)
        self.assertIn("before", r.stdout)
        self.assertNotIn("after", r.stdout)
        self.assertIn("ModuleNotFoundError: No module named 'no_such_module_xyz'", r.stderr)
        self.assertNotIn("\x1b[", r.stderr)
        nb = self.executed("bad")  # saved on failure too
        self.assertEqual(nb["cells"][1]["outputs"][0]["ename"], "ModuleNotFoundError")
        self.assertEqual(nb["cells"][2]["outputs"], [])

    def test_not_a_notebook(self):
        p = os.path.join(self.d, "x.ipynb")
        with open(p, "w") as f:
            f.write("not json")
        r = self.run_nb(p)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read", r.stderr)

    def test_stopped(self):
        p = self.write("slow.ipynb", notebook(code("print('started', flush=True)"), code("import time\nprint('sleeping', flush=True)\ntime.sleep(60)")))
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        proc = subprocess.Popen([sys.executable, "-m", "atelier.nbrun", p, "--output-dir", self.out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.time() + 60
            line = ""
            while "sleeping" not in line and time.time() < deadline:
                line = proc.stdout.readline()
            self.assertIn("sleeping", line)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 143, err)
        self.assertIn("stopped", err)
        self.assertNotIn("Task was destroyed", err)
        cells = self.executed("slow")["cells"]
        self.assertEqual("".join(cells[0]["outputs"][0]["text"]), "started\n")
        self.assertEqual(cells[1]["outputs"][-1]["ename"], "KeyboardInterrupt")


if __name__ == "__main__":
    unittest.main()
