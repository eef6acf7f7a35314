"""atelier.notebook_server, Jupyter's launcher in a notebook: what it
forces over the user's Jupyter config, and its default kernel. (The
runner's tests start it for real, over its socket.)"""

import importlib.util
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from need import need_if  # noqa: E402

have_jupyter = importlib.util.find_spec("notebook") is not None


class Launcher(unittest.TestCase):
    @need_if(not have_jupyter, "the notebook package (Debian jupyter-notebook) is not installed")
    def test_args(self):
        from atelier import notebook_server
        args = notebook_server.jupyter_args(3, "notebooks/nb-1", "/home/ma-user/work", "pytorch")
        self.assertIn("--NotebookApp.base_url=/notebooks/nb-1/", args)
        self.assertIn("--NotebookApp.notebook_dir=/home/ma-user/work", args)
        self.assertIn("--NotebookApp.sock=fd:3", args)
        self.assertIn("--NotebookApp.allow_origin=", args)
        self.assertIn("--NotebookApp.open_browser=False", args)
        self.assertIn("--EngineKernelSpecs.engine=pytorch", args)
        self.assertFalse([a for a in args if "token" in a.lower()], "the token is never on the command line")
        self.assertIn("--NotebookApp.base_url=/", notebook_server.jupyter_args(3, "/", "/w"))

    @need_if(not have_jupyter, "the notebook package (Debian jupyter-notebook) is not installed")
    def test_native_kernel_is_this_python(self):
        from atelier import notebook_server
        home = tempfile.mkdtemp()
        saved = os.environ.get("JUPYTER_DATA_DIR")
        os.environ["JUPYTER_DATA_DIR"] = os.path.join(home, "data")
        try:
            specs = notebook_server.EngineKernelSpecs(engine="python3")
            spec = specs.get_kernel_spec("python3")
            self.assertEqual(spec.argv[0], sys.executable)
            self.assertEqual(spec.display_name, "Python 3 (python3)")
            # The user's own python3 kernel spec is theirs.
            own = os.path.join(home, "data", "kernels", "python3")
            os.makedirs(own)
            with open(os.path.join(own, "kernel.json"), "w") as f:
                json.dump({"argv": ["/opt/mine/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                           "display_name": "Mine", "language": "python"}, f)
            spec = notebook_server.EngineKernelSpecs(engine="python3").get_kernel_spec("python3")
            self.assertEqual(spec.argv[0], "/opt/mine/python")
        finally:
            if saved is None:
                os.environ.pop("JUPYTER_DATA_DIR", None)
            else:
                os.environ["JUPYTER_DATA_DIR"] = saved
            for root, dirs, files in os.walk(home, topdown=False):
                for n in files:
                    os.remove(os.path.join(root, n))
                for n in dirs:
                    os.rmdir(os.path.join(root, n))
            os.rmdir(home)

    @need_if(not have_jupyter, "the notebook package (Debian jupyter-notebook) is not installed")
    def test_empty_token_is_refused(self):
        from atelier import notebook_server
        r, w = os.pipe()
        os.close(w)
        with self.assertRaises(SystemExit):
            notebook_server._read_secret(r)


if __name__ == "__main__":
    unittest.main()
