"""Jupyter (the classic Notebook 6 server) as an Atelier notebook runs it.

    python -m atelier.notebook_server --listen-fd 3 --secret-fd 4 \\
        --base-url /notebooks/ID/ --notebook-dir /home/ma-user/work [--engine NAME]

The notebook's runner makes the listening Unix socket (the platform's
proxy connects to it) and passes it as descriptor --listen-fd; Jupyter
serves on it and binds nothing itself. The token every request must carry
(the proxy sends "Authorization: token ...") arrives on the pipe
--secret-fd, so that it is in neither the command line nor the
environment. There is no password, no browser, terminals are on, and the
default kernel ("python3") is this interpreter: the runner starts the
server with the notebook's virtual environment, whose python is the
engine's, so the kernel runs the engine and sees what %pip installed into
the environment. The log goes to stderr.

The user's Jupyter config files (~/.jupyter) still apply, except for the
settings this module forces: the token, no password, the base URL, the
notebook dir, the socket, no cross-origin access.
"""

import argparse
import os
import socket
import sys

from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager
from jupyter_core.paths import jupyter_data_dir
from notebook.notebookapp import NotebookApp
from traitlets import Unicode


class EngineKernelSpecs(KernelSpecManager):
    """The native kernel ("python3") runs this interpreter (the engine's,
    in the notebook's environment) unless the user installed their own
    "python3" kernel spec in their Jupyter data dir. A system kernel.json
    (Debian's names /usr/bin/python3) is not used for it."""

    engine = Unicode("", config=True, help="the engine's name, shown in the native kernel's name")

    def get_kernel_spec(self, kernel_name):
        spec = super().get_kernel_spec(kernel_name)
        own = os.path.join(jupyter_data_dir(), "kernels", NATIVE_KERNEL_NAME)
        if kernel_name.lower() == NATIVE_KERNEL_NAME and not os.path.isdir(own):
            spec.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            if self.engine:
                spec.display_name = "Python 3 (%s)" % self.engine
        return spec


class AtelierNotebookApp(NotebookApp):
    """Serves on the inherited socket instead of binding one; the token is
    set after the config files were read, so none can change it."""

    listen_fd = -1
    secret = ""

    def init_webapp(self):
        self.token = self.secret
        self.password = ""
        super().init_webapp()

    def _bind_http_server_unix(self):
        sock = socket.socket(fileno=self.listen_fd)
        sock.setblocking(False)
        self.http_server.add_sockets([sock])
        return True


def _read_secret(fd):
    with os.fdopen(fd, "rb") as f:
        token = f.read().decode("utf-8").strip()
    if not token:
        raise SystemExit("atelier.notebook_server: the token pipe (descriptor %d) was empty" % fd)
    return token


def _parse(argv):
    ap = argparse.ArgumentParser(prog="python -m atelier.notebook_server")
    ap.add_argument("--listen-fd", type=int, required=True,
                    help="descriptor of the listening Unix socket to serve on")
    ap.add_argument("--secret-fd", type=int, required=True,
                    help="descriptor of a pipe holding the token")
    ap.add_argument("--base-url", required=True, help="Jupyter's base_url, e.g. /notebooks/ID/")
    ap.add_argument("--notebook-dir", required=True, help="the directory the notebook shows")
    ap.add_argument("--engine", default="", help="the engine's name, shown in the kernel's name")
    return ap.parse_args(argv)


def jupyter_args(listen_fd, base_url, notebook_dir, engine=""):
    """Jupyter's command line: what it forces over the user's config."""
    base_url = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
    return [
        # A dummy socket path: Unix mode (no port, no browser, no TCP
        # bind); _bind_http_server_unix serves on the inherited socket.
        "--NotebookApp.sock=fd:%d" % listen_fd,
        "--NotebookApp.base_url=" + base_url,
        "--NotebookApp.notebook_dir=" + notebook_dir,
        "--NotebookApp.open_browser=False",
        "--NotebookApp.password_required=False",
        # The proxy reaches Jupyter under the notebook listener's host
        # name; only the platform's server can connect to the socket.
        "--NotebookApp.allow_remote_access=True",
        "--NotebookApp.allow_origin=",
        "--NotebookApp.allow_origin_pat=",
        "--NotebookApp.disable_check_xsrf=False",
        # The sandbox decides who runs Jupyter (root only without one).
        "--NotebookApp.allow_root=True",
        "--NotebookApp.terminals_enabled=True",
        "--NotebookApp.quit_button=False",
        "--NotebookApp.kernel_spec_manager_class=atelier.notebook_server.EngineKernelSpecs",
        "--EngineKernelSpecs.engine=" + engine,
    ]


def main(argv=None):
    a = _parse(sys.argv[1:] if argv is None else argv)
    secret = _read_secret(a.secret_fd)
    app = AtelierNotebookApp()
    app.listen_fd, app.secret = a.listen_fd, secret
    app.initialize(jupyter_args(a.listen_fd, a.base_url, a.notebook_dir, a.engine))
    app.start()


if __name__ == "__main__":
    main()
