"""Run a Jupyter notebook headless, as a training job's boot file.

    python -m atelier.nbrun NOTEBOOK.ipynb --output-dir DIR [-- --name=value ...]

The job's arguments (its inputs, outputs and parameters, each --name=value)
fill the notebook's parameters, as papermill does: a cell is inserted after
the cell tagged "parameters" (at the top when there is none) that assigns
each name its value, parsed as a Python literal when it is one (5, 0.1,
True, [1, 2], 'x') and kept as a string otherwise; a "-" in a name becomes
"_". A cell tagged "injected-parameters" from an earlier run is replaced.

The cells run in a kernel of this interpreter (the job's Python, with its
venv), in the notebook's directory, with no time limit per cell: the job's
max runtime bounds the run. Every output is printed as it comes, so the
job's log shows progress. The executed notebook, outputs included, is
saved as DIR/<name>.executed.ipynb when the run ends, also when a cell
fails, the kernel dies or the job is stopped. A failing cell ends the run
with its traceback on stderr and exit status 1.

Needs nbformat, nbclient, jupyter_client and ipykernel (Debian:
python3-nbclient python3-ipykernel); nothing is fetched from a network.
"""

import argparse
import ast
import asyncio
import importlib.util
import json
import keyword
import os
import re
import shutil
import signal
import sys
import tempfile
import uuid
import warnings

KERNEL_NAME = "atelier-nbrun"
INJECTED_TAG = "injected-parameters"
PARAMETERS_TAG = "parameters"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def plain(s):
    """s without ANSI escape sequences (tracebacks are coloured)."""
    return _ANSI.sub("", s)


def note(msg):
    print("atelier.nbrun: " + msg, file=sys.stderr, flush=True)


def parse_value(s):
    """A parameter's value: the Python literal s spells, else the string."""
    low = s.strip().lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low in ("none", "null"):
        return None
    try:
        v = ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return s
    if isinstance(v, (int, float, complex, bool, str, bytes, list, tuple, dict, set, type(None))):
        return v
    return s


def parse_params(args):
    """[(name, value)] of --name=value arguments, in order (a later one
    wins); arguments that are not one are reported and skipped."""
    out = {}
    for a in args:
        if not a.startswith("--") or "=" not in a:
            note("ignoring argument %r: parameters are --name=value" % a)
            continue
        name, value = a[2:].split("=", 1)
        ident = name.replace("-", "_")
        if not ident.isidentifier() or keyword.iskeyword(ident):
            note("ignoring parameter %r: not a Python name" % name)
            continue
        out[ident] = parse_value(value)
    return list(out.items())


def parameters_source(params):
    lines = ["# Parameters (injected by Atelier from the job's arguments)"]
    for name, value in params:
        lines.append("%s = %r" % (name, value))
    return "\n".join(lines) + "\n"


def inject(nb, params, nbformat):
    """Put the parameters cell into nb (after the "parameters" cell);
    returns where it went, or None with nothing to inject."""
    cells = nb.cells
    for i in range(len(cells) - 1, -1, -1):
        if INJECTED_TAG in cells[i].get("metadata", {}).get("tags", []):
            del cells[i]
    if not params:
        return None
    cell = nbformat.v4.new_code_cell(source=parameters_source(params))
    cell.metadata["tags"] = [INJECTED_TAG]
    at = 0
    for i, c in enumerate(cells):
        if PARAMETERS_TAG in c.get("metadata", {}).get("tags", []):
            at = i + 1
            break
    else:
        note('no cell is tagged "parameters": the parameters go into a new first cell')
    cells.insert(at, cell)
    return at


def kernel_spec_dir(root):
    """A kernel spec that runs this interpreter's ipykernel, as
    root/kernels/atelier-nbrun (root is a Jupyter data dir)."""
    d = os.path.join(root, "kernels", KERNEL_NAME)
    os.makedirs(d)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (atelier.nbrun)",
        "language": "python",
        "metadata": {"debugger": False},
    }
    with open(os.path.join(d, "kernel.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return d


def save(nb, path, nbformat):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.replace(tmp, path)


def kernel_process(client):
    """The client's kernel process (a Popen) while it runs, else None."""
    try:
        prov = client.km.provisioner
        proc = prov.process if prov is not None else None
    except AttributeError:
        return None
    if proc is None or proc.poll() is not None:
        return None
    return proc


def make_client(nbclient):
    """A NotebookClient that prints every output as it arrives."""

    class StreamingClient(nbclient.NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            out = super().output(outs, msg, display_id, cell_index)
            try:
                show(msg)
            except Exception:  # printing never ends a run
                pass
            return out

    return StreamingClient


def show(msg):
    t = msg.get("msg_type")
    c = msg.get("content", {})
    if t == "stream":
        stream = sys.stderr if c.get("name") == "stderr" else sys.stdout
        stream.write(c.get("text", ""))
        stream.flush()
    elif t in ("execute_result", "display_data"):
        data = c.get("data", {})
        if "text/plain" in data:
            text = data["text/plain"]
            if isinstance(text, list):
                text = "".join(text)
            print(text, flush=True)
        elif data:
            print("[%s]" % ", ".join(sorted(data)), flush=True)
    # errors are printed once, with the failing cell, when the run ends


def code_cells(nb):
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    params = []
    if "--" in argv:
        i = argv.index("--")
        argv, params = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(prog="python -m atelier.nbrun", description="Run a notebook headless.")
    p.add_argument("notebook")
    p.add_argument("--output-dir", required=True, help="where NAME.executed.ipynb is saved")
    a = p.parse_args(argv)

    try:
        import nbformat
        import nbclient
        from nbclient.exceptions import CellExecutionError, DeadKernelError
        if importlib.util.find_spec("ipykernel") is None:  # the kernel this interpreter runs
            raise ImportError("No module named 'ipykernel'")
    except ImportError as e:
        note("cannot run a notebook: %s. The job's Python (%s) needs nbformat, nbclient and ipykernel "
             "(Debian: python3-nbclient python3-ipykernel; or list nbclient and ipykernel in requirements.txt)"
             % (e, sys.executable))
        return 1

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cells without ids (nbformat 4.5) are given some below
            nb = nbformat.read(a.notebook, as_version=4)
    except Exception as e:  # a file that is not a notebook
        note("cannot read %s as a notebook: %s" % (a.notebook, e))
        return 2
    if nb.get("nbformat_minor", 0) >= 5:
        for c in nb.cells:
            if not c.get("id"):
                c["id"] = uuid.uuid4().hex[:8]
    name = os.path.basename(a.notebook)
    if name.endswith(".ipynb"):
        name = name[: -len(".ipynb")]
    os.makedirs(a.output_dir, exist_ok=True)
    out_path = os.path.join(a.output_dir, name + ".executed.ipynb")

    params = parse_params(params)
    at = inject(nb, params, nbformat)
    if at is not None:
        note("parameters (cell %d): %s" % (at + 1, ", ".join("%s=%r" % kv for kv in params)))

    tmp = tempfile.mkdtemp(prefix="nbrun-")
    os.environ.setdefault("JUPYTER_RUNTIME_DIR", os.path.join(tmp, "runtime"))
    # debugpy's warning about frozen modules at every kernel start.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # The kernel spec is found first on JUPYTER_PATH: the client makes
    # the kernel of this interpreter, and shuts it down at the end.
    kernel_spec_dir(tmp)
    os.environ["JUPYTER_PATH"] = os.pathsep.join([tmp] + [d for d in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if d])
    cwd = os.path.dirname(os.path.abspath(a.notebook))
    cells = code_cells(nb)
    total = len(cells)

    def on_cell_execute(cell, cell_index):
        if stopped:
            raise KeyboardInterrupt
        n = cells.index(cell_index) + 1 if cell_index in cells else 0
        print("--- [cell %d/%d] (notebook cell %d)" % (n, total, cell_index + 1), file=sys.stderr, flush=True)

    # A stop (SIGTERM) interrupts the running cell: SIGINT to the kernel
    # every second (one sent while the kernel is between cells is lost),
    # SIGKILL after ten, or at a second SIGTERM; no further cell starts.
    # The run then ends as a failed cell would, and the notebook is saved.
    # nbclient's own handler, which shuts the kernel down under the
    # running cell, is replaced once the kernel runs.
    stopped = []

    def interrupt(n):
        proc = kernel_process(client)
        if proc is None:
            return
        try:
            proc.send_signal(signal.SIGINT if n < 10 else signal.SIGKILL)
        except OSError:
            return
        if n < 10:
            asyncio.get_event_loop().call_later(1.0, interrupt, n + 1)

    def on_term(*_):
        stopped.append(True)
        interrupt(0 if len(stopped) == 1 else 10)

    def on_notebook_start(**_):
        try:
            asyncio.get_event_loop().add_signal_handler(signal.SIGTERM, on_term)
        except (RuntimeError, NotImplementedError, ValueError):
            pass

    client = make_client(nbclient)(
        nb, kernel_name=KERNEL_NAME, timeout=None, startup_timeout=120, allow_errors=False,
        record_timing=True, resources={"metadata": {"path": cwd}}, on_cell_execute=on_cell_execute,
        on_notebook_start=on_notebook_start)

    status = 0
    old = signal.signal(signal.SIGTERM, on_term)
    note("running %s (%d code cells) with %s" % (a.notebook, total, sys.executable))
    try:
        client.execute()
        if stopped:
            raise KeyboardInterrupt
    except (CellExecutionError, DeadKernelError, KeyboardInterrupt) as e:
        if stopped or isinstance(e, KeyboardInterrupt):
            note("stopped")
            status = 143
        elif isinstance(e, DeadKernelError):
            note("the kernel died (out of memory?): %s" % e)
            status = 1
        else:
            note("a cell failed:\n" + plain(str(e)))
            status = 1
    except Exception as e:
        note("the run failed: %s: %s" % (type(e).__name__, plain(str(e))))
        status = 1
    finally:
        signal.signal(signal.SIGTERM, old)
        try:
            save(nb, out_path, nbformat)
            note("saved the executed notebook as %s" % out_path)
        except Exception as e:
            note("cannot save the executed notebook as %s: %s" % (out_path, e))
            status = status or 1
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
