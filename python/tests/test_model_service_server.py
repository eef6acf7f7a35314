"""model_service.server end to end: a real server process on a loopback
port (or a Unix socket passed as --listen-fd) per test, driven with sockets
and http.client."""

import http.client
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
import uuid

from need import need

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

ECHO = """
from model_service.model_service import SingleNodeService

class EchoService(SingleNodeService):
    def _inference(self, data):
        return {"ok": True, "echo": data}
"""

DESCRIBE = """
import time
from model_service.model_service import SingleNodeService

class Describe(SingleNodeService):
    def __init__(self, model_name, model_path):
        super().__init__(model_name, model_path)
        self.calls = 0

    def _preprocess(self, data):
        self.calls += 1
        if isinstance(data, dict) and data.get("sleep"):
            time.sleep(data["sleep"])
        if isinstance(data, dict) and data.get("raise"):
            raise ValueError("boom: " + data["raise"])
        out = {}
        for k, v in (data.items() if isinstance(data, dict) else []):
            if isinstance(v, dict):
                out[k] = {name: [f.read().decode("latin-1"), f.content_type] for name, f in v.items()}
            elif isinstance(v, bytes):
                out[k] = "bytes:" + v.decode("latin-1")
            else:
                out[k] = v
        return out

    def _postprocess(self, data):
        return {"name": self.model_name, "path": self.model_path, "calls": self.calls, "data": data}
"""


def read_response(f):
    """(status, headers, body) of one response read from the socket file f."""
    line = f.readline()
    if not line:
        raise EOFError("connection closed")
    status = int(line.split(b" ")[1])
    headers = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    body = f.read(int(headers.get("content-length", "0")))
    return status, headers, body


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix socket."""

    def __init__(self, path, timeout=30):
        http.client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.unix_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


TCP = ("--port", "0", "--host", "127.0.0.1")


class Server(object):
    """A model_service.server process for one model directory. listen: the
    arguments that say where it listens (TCP: a free loopback port);
    pass_fds: fds the process inherits."""

    def __init__(self, model_dir, *extra, name="m", listen=TCP, pass_fds=()):
        self.model_dir = model_dir
        self.ready_file = os.path.join(model_dir, "..", "ready-%s.json" % uuid.uuid4().hex[:8])
        self.stderr_path = self.ready_file + ".log"
        env = dict(os.environ)
        env["PYTHONPATH"] = PYTHON_DIR
        env["PYTHONUNBUFFERED"] = "1"
        self.err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "model_service.server", "--model-dir", model_dir, "--model-name", name]
            + list(listen) + ["--ready-file", self.ready_file] + list(extra),
            stdout=self.err, stderr=self.err, env=env, cwd=tempfile.gettempdir(), pass_fds=tuple(pass_fds))
        self.state = self._wait_ready()
        self.port = self.state.get("port")
        self.unix_path = self.state.get("socket")

    def _wait_ready(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if os.path.exists(self.ready_file):
                with open(self.ready_file) as f:
                    return json.load(f)
            if self.proc.poll() is not None:
                if os.path.exists(self.ready_file):
                    continue
                return {"state": "exited", "code": self.proc.returncode}
            time.sleep(0.01)
        raise AssertionError("no ready file after %ds; log:\n%s" % (timeout, self.log()))

    def log(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def conn(self):
        if self.unix_path:
            return UnixHTTPConnection(self.unix_path)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method, path, body=None, headers=None):
        c = self.conn()
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            c.close()

    def post_json(self, obj, path="/"):
        status, headers, body = self.request("POST", path, json.dumps(obj), {"Content-Type": "application/json"})
        return status, json.loads(body)

    def raw(self):
        if self.unix_path:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(self.unix_path)
        else:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        return s, s.makefile("rb")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        return self.proc.returncode


class ServerTestCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="ms-server-")
        self.addCleanup(shutil.rmtree, self.root, True)

    def model(self, code, config=None, files=None, name=None):
        d = os.path.join(self.root, name or "model-" + uuid.uuid4().hex[:8])
        os.makedirs(d)
        with open(os.path.join(d, "customize_service.py"), "w") as f:
            f.write(textwrap.dedent(code))
        if config is not None:
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(config if isinstance(config, str) else json.dumps(config))
        for rel, content in (files or {}).items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(content if isinstance(content, bytes) else content.encode())
        return d

    def serve(self, model_dir, *extra):
        s = Server(model_dir, *extra)
        self.addCleanup(s.stop)
        return s

    def serve_ok(self, code, config=None, files=None, extra=()):
        s = self.serve(self.model(code, config, files), *extra)
        self.assertEqual(s.state["state"], "ready", s.log())
        return s

    def failed(self, code, config=None, files=None, stage="load"):
        s = self.serve(self.model(code, config, files))
        self.assertEqual(s.proc.wait(30), 3, s.log())
        self.assertEqual(s.state["state"], "failed", s.state)
        self.assertEqual(s.state["stage"], stage, s.state)
        return s


class RequestTests(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.croot = tempfile.mkdtemp(prefix="ms-server-shared-")
        d = os.path.join(cls.croot, "model")
        os.makedirs(d)
        with open(os.path.join(d, "customize_service.py"), "w") as f:
            f.write(DESCRIBE)
        cls.s = Server(d, "--max-body", "4KiB", "--max-header", "2KiB", name="describe")
        assert cls.s.state["state"] == "ready", cls.s.log()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        shutil.rmtree(cls.croot, True)

    def test_ready_file(self):
        st = self.s.state
        self.assertEqual(st["state"], "ready")
        self.assertIsInstance(st["port"], int)
        self.assertEqual(st["pid"], self.s.proc.pid)
        self.assertEqual(st["handler"], "customize_service.Describe")

    def test_json(self):
        status, headers, body = self.s.request("POST", "/", json.dumps({"x": [1, 2], "é": "ü"}).encode(),
                                               {"Content-Type": "application/json", "X-Request-Id": "abc-1"})
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers["x-request-id"], "abc-1")
        r = json.loads(body)
        self.assertEqual(r["data"], {"x": [1, 2], "é": "ü"})
        self.assertEqual(r["name"], "describe")
        self.assertEqual(r["path"], os.path.join(self.croot, "model"))  # not PyTorch: the dir
        # every POST path runs the model (KServe v2 paths included)
        status, r = self.s.post_json({"inputs": []}, "/v2/models/m/infer")
        self.assertEqual((status, r["data"]), (200, {"inputs": []}))

    def test_multipart(self):
        boundary = "----atelier" + uuid.uuid4().hex
        body = b"".join([
            b"--", boundary.encode(), b"\r\n",
            b'Content-Disposition: form-data; name="images"; filename="cat.jpg"\r\n',
            b"Content-Type: image/jpeg\r\n\r\n", b"\xffJPEG\r\ndata", b"\r\n",
            b"--", boundary.encode(), b"\r\n",
            b'Content-Disposition: form-data; name="note"\r\n\r\n', "héllo".encode(), b"\r\n",
            b"--", boundary.encode(), b"--\r\n"])
        status, _, out = self.s.request("POST", "/", body,
                                        {"Content-Type": "multipart/form-data; boundary=" + boundary})
        self.assertEqual(status, 200, out)
        self.assertEqual(json.loads(out)["data"], {"images": {"cat.jpg": ["\xffJPEG\r\ndata", "image/jpeg"]},
                                                   "note": "héllo"})
        status, _, out = self.s.request("POST", "/", b"--x\r\nbroken",
                                        {"Content-Type": "multipart/form-data; boundary=x"})
        self.assertEqual((status, json.loads(out)["error_code"]), (400, "ATL.SVC.0502"))

    def test_other_content_types(self):
        status, _, out = self.s.request("POST", "/", b"raw\x00", {"Content-Type": "application/octet-stream"})
        self.assertEqual(json.loads(out)["data"], {"data": "bytes:raw\x00"})
        status, _, out = self.s.request("POST", "/", b'{"a": 1}',
                                        {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(json.loads(out)["data"], {"a": 1})
        status, _, out = self.s.request("POST", "/")
        self.assertEqual((status, json.loads(out)["data"]), (200, {}))

    def test_keepalive_and_pipelining(self):
        s, f = self.s.raw()
        try:
            body = b'{"n": 1}'
            req = (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                   % (len(body), body))
            s.sendall(req)
            st1, h1, b1 = read_response(f)
            s.sendall(req)  # the same connection again
            st2, h2, b2 = read_response(f)
            self.assertEqual((st1, st2), (200, 200))
            self.assertNotIn("connection", h1)
            self.assertEqual(json.loads(b2)["data"], {"n": 1})
            s.sendall(req.replace(b"1}", b"2}") + b"GET /health/live HTTP/1.1\r\n\r\n" + req.replace(b"1}", b"3}"))
            rs = [read_response(f) for _ in range(3)]
            self.assertEqual([r[0] for r in rs], [200, 200, 200])
            self.assertEqual(json.loads(rs[0][2])["data"], {"n": 2})
            self.assertEqual(rs[1][2], b'{"status":"alive"}')
            self.assertEqual(json.loads(rs[2][2])["data"], {"n": 3})
            s.sendall(b"POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
            st, h, _ = read_response(f)
            self.assertEqual(h.get("connection"), "close")
            self.assertEqual(f.read(), b"")  # the server closed
        finally:
            f.close()
            s.close()

    def test_chunked_and_continue(self):
        s, f = self.s.raw()
        try:
            s.sendall(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
                      b"4\r\n{\"k\"\r\n")
            time.sleep(0.05)
            s.sendall(b"6;name=v\r\n: \"v\"}\r\n0\r\n\r\n")
            st, _, body = read_response(f)
            self.assertEqual((st, json.loads(body)["data"]), (200, {"k": "v"}))
            s.sendall(b"POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
            st, _, _ = read_response(f)
            self.assertEqual(st, 100)
            s.sendall(b"[]")
            st, _, body = read_response(f)
            self.assertEqual(st, 200)
        finally:
            f.close()
            s.close()

    def test_errors(self):
        status, _, out = self.s.request("POST", "/", b"{bad", {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        r = json.loads(out)
        self.assertEqual(r["error_code"], "ATL.SVC.0501")
        self.assertIn("Expecting property name", r["error_msg"])
        status, _, out = self.s.request("POST", "/", json.dumps({"raise": "xyz"}), {"X-Request-Id": "fail-7",
                                                                                   "Content-Type": "application/json"})
        self.assertEqual(status, 500)
        self.assertEqual(json.loads(out), {"error_code": "ATL.SVC.0500", "error_msg": "ValueError: boom: xyz"})
        deadline = time.time() + 5
        while "fail-7" not in self.s.log() and time.time() < deadline:
            time.sleep(0.02)
        log = self.s.log()
        self.assertIn("request fail-7 POST / failed: ValueError: boom: xyz", log)
        self.assertIn('raise ValueError("boom: " + data["raise"])', log)  # the traceback
        status, _, out = self.s.request("POST", "/", b"x" * 5000)
        self.assertEqual((status, json.loads(out)["error_code"]), (413, "ATL.SVC.0506"))
        status, _, out = self.s.request("GET", "/", headers={"X-Big": "a" * 3000})
        self.assertEqual((status, json.loads(out)["error_code"]), (431, "ATL.SVC.0507"))
        status, _, out = self.s.request("GET", "/predict")
        self.assertEqual((status, json.loads(out)["error_code"]), (404, "ATL.SVC.0504"))
        status, headers, out = self.s.request("DELETE", "/")
        self.assertEqual((status, json.loads(out)["error_code"]), (405, "ATL.SVC.0505"))
        self.assertEqual(headers["allow"], "POST, GET, HEAD")
        # chunked over the limit
        s, f = self.s.raw()
        try:
            s.sendall(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1001\r\n" + b"x" * 4097 + b"\r\n0\r\n\r\n")
            st, _, body = read_response(f)
            self.assertEqual((st, json.loads(body)["error_code"]), (413, "ATL.SVC.0506"))
        finally:
            f.close()
            s.close()
        # the server still answers
        self.assertEqual(self.s.request("GET", "/health/live")[0], 200)

    def test_health(self):
        self.assertEqual(self.s.request("GET", "/health/live")[::2], (200, b'{"status":"alive"}'))
        self.assertEqual(self.s.request("GET", "/health/ready")[::2], (200, b'{"status":"ready"}'))
        status, headers, body = self.s.request("HEAD", "/health/ready")
        self.assertEqual((status, body, headers["content-length"]), (200, b"", "18"))

    def test_health_while_handler_busy(self):
        t = threading.Thread(target=self.s.post_json, args=({"sleep": 1.0},))
        t.start()
        try:
            time.sleep(0.2)
            t0 = time.time()
            self.assertEqual(self.s.request("GET", "/health/live")[0], 200)
            self.assertLess(time.time() - t0, 0.5)  # the event loop is not blocked by the handler
        finally:
            t.join()


class LoadTests(ServerTestCase):
    def test_model_path_and_sibling_module_and_log(self):
        s = self.serve_ok("""
            import log
            import helper
            from model_service.pytorch_model_service import PTServingBaseService
            from model_service.log_util import get_logger

            logger = log.getLogger(__name__)
            get_logger("x").info("handler module imported")

            class Svc(PTServingBaseService):
                def __init__(self, model_name, model_path):
                    super(Svc, self).__init__(model_name, model_path)
                    self.model = helper.double
                    logger.info("loaded from %s", model_path)

                def _postprocess(self, data):
                    return {"path": self.model_path, "out": data}
            """, {"model_type": "PyTorch"}, {"helper.py": "def double(v):\n    return v * 2\n",
                                              "b.pth": b"", "a.pt": b"", "0.txt": b""})
        status, r = s.post_json({"k": 21})
        self.assertEqual(status, 200)
        self.assertEqual(r, {"path": os.path.join(s.model_dir, "a.pt"), "out": {"k": 42}})
        self.assertEqual(s.state["model_path"], os.path.join(s.model_dir, "a.pt"))
        log = s.log()
        self.assertIn("loaded from", log)
        self.assertIn("handler module imported", log)

    def test_one_argument_init(self):
        s = self.serve_ok("""
            from model_service.model_service import SingleNodeService

            class Ml(SingleNodeService):
                def __init__(self, model_path):
                    self.where = model_path

                def _inference(self, data):
                    return {"where": self.where, "name": self.model_name}
            """)
        self.assertEqual(s.post_json({})[1], {"where": s.model_dir, "name": "m"})

    def test_workers(self):
        s = self.serve_ok(DESCRIBE, extra=("--workers", "3"))
        t0 = time.time()
        ts = [threading.Thread(target=s.post_json, args=({"sleep": 0.6},)) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertLess(time.time() - t0, 1.5)  # in parallel, not 1.8 s in a row

    def test_warmup_json(self):
        s = self.serve_ok(DESCRIBE, {"warmup": {"json": {"w": 1}}})
        self.assertEqual(s.post_json({})[1]["calls"], 2)  # the warmup ran first
        self.assertIn("warmup request succeeded", s.log())

    def test_warmup_file(self):
        code = DESCRIBE.replace("return {\"name\"", "self.seen = data\n        return {\"name\"").replace(
            "def _preprocess(self, data):",
            "def _preprocess(self, data):\n        if self.calls == 0:\n"
            "            assert data['img']['x.png'].read() == b'PNGDATA', data\n")
        s = self.serve_ok(code, {"warmup": {"file": "samples/x.png", "field": "img"}},
                          {"samples/x.png": b"PNGDATA"})
        self.assertEqual(s.post_json({})[1]["calls"], 2)

    def test_warmup_failure(self):
        s = self.failed(DESCRIBE, {"warmup": {"json": {"raise": "in warmup"}}}, stage="warmup")
        self.assertEqual(s.state["error"], "ValueError: boom: in warmup")
        self.assertIn("Traceback (most recent call last)", s.state["traceback"])
        self.assertIn("customize_service.py", s.state["traceback"])
        self.assertNotIn("model_service/server.py", s.state["traceback"])  # the handler's frames only
        s = self.failed(DESCRIBE, {"warmup": {"file": "missing.png"}}, stage="warmup")
        self.assertIn("missing.png", s.state["error"])
        s = self.failed(ECHO.replace('return {"ok": True, "echo": data}', "return object()"),
                        {"warmup": {"json": {}}}, stage="warmup")
        self.assertIn("not JSON serializable", s.state["error"])

    def test_load_failures(self):
        s = self.failed("from model_service.model_service import SingleNodeService\nclass A(SingleNodeService)\n")
        self.assertTrue(s.state["error"].startswith("SyntaxError:"), s.state)
        self.assertIn("customize_service.py", s.state["traceback"])
        self.assertIn("line 2", s.state["traceback"])
        self.assertIn("SyntaxError", s.log())
        s = self.failed("import os\nclass NotAHandler(object):\n    pass\n")
        self.assertIn("defines no handler class", s.state["error"])
        s = self.failed("from model_service.model_service import SingleNodeService as Base\n")
        self.assertIn("defines no handler class", s.state["error"])
        s = self.failed("""
            from model_service.model_service import SingleNodeService
            from model_service.pytorch_model_service import PTServingBaseService
            class First(SingleNodeService):
                pass
            class Second(PTServingBaseService):
                pass
            """)
        self.assertIn("defines 2 handler classes (First, Second)", s.state["error"])
        s = self.failed("""
            from model_service.model_service import SingleNodeService
            class Bad(SingleNodeService):
                def __init__(self, model_name, model_path):
                    raise RuntimeError("cannot load weights")
            """)
        self.assertEqual(s.state["error"], "RuntimeError: cannot load weights")
        self.assertIn('raise RuntimeError("cannot load weights")', s.state["traceback"])
        s = self.failed("import no_such_module_xyz\n")
        self.assertTrue(s.state["error"].startswith("ModuleNotFoundError:"))
        s = self.failed("import sys\nsys.exit(4)\n")
        self.assertEqual(s.state["error"], "SystemExit: 4")
        s = self.failed(ECHO, "{not json")
        self.assertIn("config.json is not valid JSON", s.state["error"])
        d = os.path.join(self.root, "empty")
        os.makedirs(d)
        s = self.serve(d)
        self.assertEqual(s.proc.wait(30), 3)
        self.assertIn("customize_service.py not found", s.state["error"])

    def test_bind_failure(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        self.addCleanup(busy.close)
        d = self.model(ECHO)
        s = Server(d, "--port", str(busy.getsockname()[1]))  # the later --port wins
        self.addCleanup(s.stop)
        self.assertEqual(s.proc.wait(30), 3)
        self.assertEqual((s.state["state"], s.state["stage"]), ("failed", "bind"))

    def test_usage_error(self):
        p = subprocess.run([sys.executable, "-m", "model_service.server", "--model-dir", self.root],
                           env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--model-name", p.stderr)

    def test_sigterm_graceful(self):
        s = self.serve_ok(DESCRIBE)
        idle, idle_f = s.raw()  # an idle keep-alive connection
        self.addCleanup(idle.close)
        result = {}

        def slow():
            result["r"] = s.post_json({"sleep": 1.0})

        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        self.assertEqual(idle_f.read(), b"")  # closed at once
        with self.assertRaises(OSError):  # no longer listening
            socket.create_connection(("127.0.0.1", s.port), timeout=2).close()
        t.join()
        self.assertEqual(result["r"][0], 200)  # the request in progress finished
        self.assertEqual(s.proc.wait(10), 0)
        self.assertIn("stopping: 1 request(s) in progress", s.log())


# A handler that tells what it can see of the server's fds: the secret fd
# must be closed and the listening socket non-inheritable before it is
# imported, and requests reach it as the decoded body only.
FDS = """
import os
import sys
from model_service.model_service import SingleNodeService


def _fd_after(flag):
    return int(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else None


def _is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


SECRET_FD = _fd_after("--secret-fd")
LISTEN_FD = _fd_after("--listen-fd")
SECRET_FD_OPEN = SECRET_FD is not None and _is_open(SECRET_FD)
LISTEN_FD_INHERITABLE = LISTEN_FD is not None and os.get_inheritable(LISTEN_FD)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "imported"), "w") as f:
    f.write("yes")


class Fds(SingleNodeService):
    def __init__(self, model_name, model_path):
        super().__init__(model_name, model_path)
        self.calls = 0

    def _inference(self, data):
        self.calls += 1
        return {"calls": self.calls, "data": data, "secret_fd_open": SECRET_FD_OPEN,
                "listen_fd_inheritable": LISTEN_FD_INHERITABLE}
"""

SECRET = "s3cr3t-" + uuid.uuid4().hex
SECRET_HEADER = "X-Atelier-Instance-Secret"
REFUSED = {"error_code": "ATL.SVC.0512", "error_msg": "the request does not carry this instance's secret"}


def secret_pipe(content):
    """The read end of a pipe that holds content and is closed for writing."""
    r, w = os.pipe()
    os.write(w, content)
    os.close(w)
    return r


class ListenFdTests(ServerTestCase):
    """--listen-fd (a Unix socket the runner bound) and --secret-fd."""

    def unix_listener(self, listen=True):
        path = os.path.join(self.root, "http-%s.sock" % uuid.uuid4().hex[:8])
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        sock.bind(path)
        if listen:
            sock.listen(16)
        return sock, path

    def start(self, code=FDS, secret=SECRET.encode(), sock=None, extra=()):
        """A server on sock (a new listening Unix socket when None) with
        secret passed on a pipe (none when secret is None)."""
        if sock is None:
            sock, _ = self.unix_listener()
        fds = [] if getattr(sock, "closed", False) else [sock.fileno()]
        args = ["--listen-fd", str(sock.fileno())]
        r = None
        if secret is not None:
            r = secret_pipe(secret)
            fds.append(r)
            args += ["--secret-fd", str(r)]
        try:
            s = Server(self.model(code), *extra, listen=args, pass_fds=fds)
        finally:
            if r is not None:
                os.close(r)
        self.addCleanup(s.stop)
        return s

    def start_ok(self, *a, **kw):
        s = self.start(*a, **kw)
        self.assertEqual(s.state["state"], "ready", s.log())
        return s

    def post(self, s, obj, secret=SECRET, path="/"):
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers[SECRET_HEADER] = secret
        status, h, body = s.request("POST", path, json.dumps(obj), headers)
        return status, h, json.loads(body)

    def wait_log(self, s, text):
        deadline = time.time() + 5
        while text not in s.log() and time.time() < deadline:
            time.sleep(0.02)
        return s.log()

    def test_unix_socket_ready_file_and_secret(self):
        sock, path = self.unix_listener()
        s = self.start_ok(sock=sock)
        sock.close()  # the server holds its own copy
        self.assertEqual(s.state["socket"], path)
        self.assertNotIn("port", s.state)
        self.assertEqual(s.state["pid"], s.proc.pid)
        self.assertEqual(s.state["handler"], "customize_service.Fds")
        self.assertEqual(s.state["model_path"], s.model_dir)
        self.assertIn("on unix socket %s with 1 worker thread(s)" % path, s.log())
        status, headers, r = self.post(s, {"x": 1})
        self.assertEqual(status, 200, r)
        self.assertNotIn("connection", headers)
        self.assertEqual(r, {"calls": 1, "data": {"x": 1}, "secret_fd_open": False,
                             "listen_fd_inheritable": False})
        for method in ("GET", "HEAD"):
            for path_ in ("/health/live", "/health/ready"):
                status, _, _ = s.request(method, path_, headers={SECRET_HEADER: SECRET})
                self.assertEqual(status, 200, (method, path_))
        # keep-alive with the secret: several requests on one connection
        c = s.conn()
        try:
            for i in range(3):
                c.request("POST", "/", json.dumps({"i": i}),
                          {"Content-Type": "application/json", SECRET_HEADER: SECRET})
                resp = c.getresponse()
                self.assertEqual((resp.status, json.loads(resp.read())["data"]), (200, {"i": i}))
        finally:
            c.close()

    def test_refused_without_the_secret(self):
        s = self.start_ok()
        wrong = [None, "", "wrong", SECRET.upper(), SECRET[:-1], SECRET[:8], SECRET + "x", " x" + SECRET,
                 SECRET + ", " + SECRET]
        for value in wrong:
            status, headers, r = self.post(s, {"x": 1}, secret=value)
            self.assertEqual((status, r), (403, REFUSED), value)
            self.assertEqual(headers.get("connection"), "close", value)
            self.assertEqual(headers["content-type"], "application/json")
        # the header given twice (joined: "S, S") is not the secret either
        sk, f = s.raw()
        try:
            sk.sendall(("GET /health/live HTTP/1.1\r\n%s: %s\r\n%s: %s\r\n\r\n"
                        % (SECRET_HEADER, SECRET, SECRET_HEADER, SECRET)).encode())
            st, _, body = read_response(f)
            self.assertEqual((st, json.loads(body)), (403, REFUSED))
        finally:
            f.close()
            sk.close()
        # every method and path needs it, the health paths included
        for method, path in (("GET", "/health/ready"), ("GET", "/health/live"), ("HEAD", "/health/ready"),
                             ("GET", "/nowhere"), ("DELETE", "/"), ("PUT", "/x")):
            status, _, body = s.request(method, path)
            self.assertEqual(status, 403, (method, path))
            if method != "HEAD":
                self.assertEqual(json.loads(body), REFUSED, (method, path))
        self.assertEqual(s.request("GET", "/health/ready", headers={SECRET_HEADER: SECRET})[::2],
                         (200, b'{"status":"ready"}'))
        # the header name is case-insensitive, as any HTTP header's
        status, _, r = s.request("POST", "/", b"{}", {"x-atelier-instance-SECRET": SECRET})
        self.assertEqual(status, 200)
        # the handler ran for none of the refused requests
        self.assertEqual(self.post(s, {})[2]["calls"], 2)
        log = self.wait_log(s, "refused request")
        self.assertIn("WARNING model_service: refused request", log)
        self.assertIn("no X-Atelier-Instance-Secret header", log)
        self.assertIn("the X-Atelier-Instance-Secret header does not match", log)
        self.assertEqual(log.count("refused request"), len(wrong) + 1 + 6)  # one line per refused request
        self.assertNotIn(SECRET[7:], log)  # neither the secret nor a wrong value is logged
        self.assertNotIn(SECRET.upper()[7:], log)

    def test_refused_request_closes_the_connection(self):
        # A refused request is answered 403 with `connection: close` before
        # its body is read; the connection is then closed and nothing sent
        # after it on that connection (a pipelined request with the secret
        # included) is answered or run. A new connection works.
        s = self.start_ok()
        body = b'{"n": 1}'
        good = (b"POST / HTTP/1.1\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s"
                % (SECRET_HEADER.encode(), SECRET.encode(), len(body), body))
        bad = b"POST / HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
            len(body), body)
        sk, f = s.raw()
        try:
            sk.sendall(good)
            st, h, b = read_response(f)
            self.assertEqual((st, json.loads(b)["calls"]), (200, 1))
            sk.sendall(bad + good)
            st, h, b = read_response(f)
            self.assertEqual((st, json.loads(b)), (403, REFUSED))
            self.assertEqual(h.get("connection"), "close")
            self.assertEqual(f.read(), b"")  # closed; the pipelined request got no answer
        finally:
            f.close()
            sk.close()
        # Expect: 100-continue without the secret: 403 at once, no 100
        sk, f = s.raw()
        try:
            sk.sendall(b"POST / HTTP/1.1\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
            st, h, b = read_response(f)
            self.assertEqual((st, json.loads(b)), (403, REFUSED))
            self.assertEqual(f.read(), b"")
        finally:
            f.close()
            sk.close()
        status, _, r = self.post(s, {"n": 2})
        self.assertEqual((status, r["calls"], r["data"]), (200, 2, {"n": 2}))  # the pipelined one never ran

    def test_no_secret_fd_no_check(self):
        s = self.start_ok(secret=None)
        status, _, r = self.post(s, {"a": 1}, secret=None)
        self.assertEqual((status, r["data"]), (200, {"a": 1}))
        status, _, r = self.post(s, {"a": 2}, secret="anything")
        self.assertEqual((status, r["data"]), (200, {"a": 2}))
        self.assertEqual(s.request("GET", "/health/ready")[0], 200)

    def test_tcp_socket_as_listen_fd(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        s = self.start_ok(sock=sock)
        self.assertEqual(s.state["port"], sock.getsockname()[1])
        self.assertNotIn("socket", s.state)
        self.assertIn("on 127.0.0.1:%d (fd %d)" % (s.port, sock.fileno()), s.log())
        self.assertEqual(self.post(s, {"t": 1})[0], 200)
        self.assertEqual(self.post(s, {"t": 1}, secret=None)[0], 403)

    def test_sigterm(self):
        sock, path = self.unix_listener()
        s = self.start_ok(sock=sock)
        self.assertEqual(self.post(s, {})[0], 200)
        s.proc.send_signal(signal.SIGTERM)
        self.assertEqual(s.proc.wait(10), 0)
        self.assertTrue(os.path.exists(path))  # the socket file is the runner's: left in place

    def assert_bind_failure(self, s, fd, why):
        self.assertEqual(s.proc.wait(30), 3, s.log())
        self.assertEqual((s.state["state"], s.state["stage"]), ("failed", "bind"), s.state)
        self.assertIn("--listen-fd %d is not a listening stream socket" % fd, s.state["error"])
        self.assertIn(why, s.state["error"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "imported")))  # checked before loading

    def test_listen_fd_not_a_socket(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        s = self.start(sock=_Fd(r))
        self.assert_bind_failure(s, r, "non-socket")
        self.assertIn("bind failed:", s.log())

    def test_listen_fd_not_listening(self):
        sock, _ = self.unix_listener(listen=False)
        self.assert_bind_failure(self.start(sock=sock), sock.fileno(), "not listening")
        dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(dgram.close)
        dgram.bind(os.path.join(self.root, "dgram.sock"))
        self.assert_bind_failure(self.start(sock=dgram), dgram.fileno(), "SOCK_STREAM")

    def test_listen_fd_closed(self):
        s = self.start(sock=_Fd(1000, closed=True), secret=None)
        self.assert_bind_failure(s, 1000, "Bad file descriptor")

    def test_listen_fd_and_port(self):
        for extra in (["--port", "0"], ["--port", "8080"]):
            p = subprocess.run([sys.executable, "-m", "model_service.server", "--model-dir", self.root,
                                "--model-name", "m", "--listen-fd", "3"] + extra,
                               env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(b"--listen-fd and --port cannot be used together", p.stderr)
        p = subprocess.run([sys.executable, "-m", "model_service.server", "--model-dir", self.root,
                            "--model-name", "m", "--listen-fd", "x"],
                           env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--listen-fd", p.stderr)

    def test_empty_secret(self):
        for content in (b"", b" \n\t\n"):
            s = self.start(secret=content)
            self.assertEqual(s.proc.wait(30), 3, s.log())
            self.assertEqual((s.state["state"], s.state["stage"]), ("failed", "load"), s.state)
            self.assertRegex(s.state["error"], r"^ValueError: the instance secret read from --secret-fd \d+ is empty$")
            self.assertFalse(os.path.exists(os.path.join(self.root, "imported")))  # before the handler's import

    def test_bad_secret_fd(self):
        s = self.start(secret=b"a\x00b")
        self.assertEqual(s.proc.wait(30), 3, s.log())
        self.assertEqual(s.state["stage"], "load")
        self.assertIn("control characters", s.state["error"])
        self.assertNotIn("a\\u0000b", json.dumps(s.state))
        sock, _ = self.unix_listener()
        s = Server(self.model(FDS), "--secret-fd", "1000", listen=["--listen-fd", str(sock.fileno())],
                   pass_fds=[sock.fileno()])
        self.addCleanup(s.stop)
        self.assertEqual(s.proc.wait(30), 3, s.log())
        self.assertEqual(s.state["stage"], "load")
        self.assertIn("cannot read the instance secret from --secret-fd 1000", s.state["error"])

    def test_secret_over_tcp(self):
        # --secret-fd works with --port too
        r = secret_pipe(SECRET.encode() + b"\n")
        try:
            s = Server(self.model(FDS), "--secret-fd", str(r), pass_fds=[r])
        finally:
            os.close(r)
        self.addCleanup(s.stop)
        self.assertEqual(s.state["state"], "ready", s.log())
        self.assertIsInstance(s.state["port"], int)
        self.assertEqual(self.post(s, {})[0], 200)
        self.assertEqual(self.post(s, {}, secret=None)[0], 403)


class _Fd(object):
    """A bare fd where ListenFdTests.start wants a socket."""

    def __init__(self, fd, closed=False):
        self.fd = fd
        self.closed = closed  # not passed to the server

    def fileno(self):
        return self.fd


MNIST_NET = """
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(784, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.view(-1, 784)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)
"""

MNIST_SERVICE = """
import os
import log
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
import torchvision.transforms as transforms
from model_service.pytorch_model_service import PTServingBaseService

logger = log.getLogger(__name__)

infer_transformation = transforms.Compose([
    transforms.Resize((28, 28)),
    transforms.ToTensor(),
])
""" + MNIST_NET + """

class MnistService(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super(MnistService, self).__init__(model_name, model_path)
        self.model = Net()
        self.model.load_state_dict(torch.load(model_path, map_location="cpu"))
        self.model.eval()
        dir_path = os.path.dirname(os.path.realpath(self.model_path))
        with open(os.path.join(dir_path, "labels.txt")) as f:
            self.labels = f.read().split()

    def _preprocess(self, data):
        preprocessed_data = {}
        for k, v in data.items():
            for file_name, file_content in v.items():
                image = Image.open(file_content).convert("L")
                preprocessed_data[k] = infer_transformation(image)
        return preprocessed_data

    def _inference(self, data):
        img = data["images"].unsqueeze(0)
        with torch.no_grad():
            pred = self.model(img)
        return pred

    def _postprocess(self, data):
        idx = int(data.argmax(dim=1)[0])
        logger.info("predicted %d", idx)
        return {"mnist_result": self.labels[idx], "scores": data[0].exp()}
"""


STALL = """
import threading, time
from model_service.model_service import SingleNodeService

class Stall(SingleNodeService):
    def _inference(self, data):
        if data.get("sleep"):
            time.sleep(data["sleep"])
        if data.get("spin"):  # a busy loop in Python code
            end = time.monotonic() + data["spin"]
            n = 0
            while time.monotonic() < end:
                n += 1
        if data.get("wait"):  # says it started, then runs until the test lets go (the file appears)
            import os
            open(data["wait"] + ".started.%d" % threading.get_ident(), "w").close()
            while not os.path.exists(data["wait"]):
                time.sleep(0.01)
        return {"done": True}
"""


def until(cond, timeout=10.0, step=0.02):
    """Poll cond() until it returns a true value (returned) or timeout
    seconds pass (AssertionError)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("condition not met within %gs" % timeout)
        time.sleep(step)


class LivenessTests(ServerTestCase):
    """GET /health/live, the runner's liveness probe, is answered on the
    event loop whatever the handler does, and fails (503 ATL.SVC.0513) once
    every worker has been on one request past --stuck-after."""

    def probe(self, s):
        """(status, body, seconds the answer took)."""
        t0 = time.monotonic()
        status, _, body = s.request("GET", "/health/live")
        return status, json.loads(body), time.monotonic() - t0

    def stall(self, s, how, seconds):
        t = threading.Thread(target=s.post_json, args=({how: seconds},))
        t.start()
        self.addCleanup(t.join)
        if how == "wait":  # let it go before the join (cleanups run last first)
            self.addCleanup(lambda: open(seconds, "w").close())
        return t

    def check_stuck(self, how):
        s = self.serve_ok(STALL, extra=("--stuck-after", "0.5"))
        self.assertEqual(self.probe(s)[:2], (200, {"status": "alive"}))
        t = self.stall(s, how, 2.0)
        answered = []

        def stuck():
            status, body, took = self.probe(s)
            answered.append(took)
            return body if status == 503 else None
        body = until(stuck, timeout=5)
        self.assertEqual(body["error_code"], "ATL.SVC.0513", body)
        self.assertIn("every worker (1 of 1) has been running one request for more than 0.5s", body["error_msg"])
        # Every probe was answered at once, not queued behind the handler.
        self.assertLess(max(answered), 0.4, answered)
        t.join()
        self.assertEqual(self.probe(s)[:2], (200, {"status": "alive"}))  # it finished: live again
        self.assertIn("GET /health/live 503", s.log())

    def test_stuck_in_sleep(self):
        self.check_stuck("sleep")

    def test_stuck_in_a_python_loop(self):
        self.check_stuck("spin")

    def started(self, flag, n):
        """Wait until n requests of "wait" mode with flag run in workers."""
        until(lambda: len([f for f in os.listdir(self.root) if f.startswith(os.path.basename(flag) + ".started.")]) >= n)

    def live_for(self, s, seconds):
        """The probe answers 200 at once, again and again, for seconds."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            status, body, took = self.probe(s)
            self.assertEqual((status, body), (200, {"status": "alive"}))
            self.assertLess(took, 0.4)
            time.sleep(0.05)

    def test_busy_but_not_past_the_limit(self):
        flag = os.path.join(self.root, "go")
        s = self.serve_ok(STALL, extra=("--stuck-after", "30"))
        self.stall(s, "wait", flag)
        self.started(flag, 1)
        self.live_for(s, 0.5)
        open(flag, "w").close()

    def test_one_free_worker_is_live(self):
        flag = os.path.join(self.root, "go")
        s = self.serve_ok(STALL, extra=("--stuck-after", "0.3", "--workers", "2"))
        self.stall(s, "wait", flag)
        self.started(flag, 1)
        # One worker on a request past the limit, one free: live.
        self.live_for(s, 0.8)
        # Both on requests past the limit: stuck.
        self.stall(s, "wait", flag)
        self.started(flag, 2)
        until(lambda: self.probe(s)[0] == 503, timeout=5)
        open(flag, "w").close()
        until(lambda: self.probe(s)[0] == 200, timeout=5)

    def test_no_limit_no_stuck(self):
        flag = os.path.join(self.root, "go")
        s = self.serve_ok(STALL)
        self.stall(s, "wait", flag)
        self.started(flag, 1)
        self.live_for(s, 0.7)
        open(flag, "w").close()


class TorchTests(ServerTestCase):
    """A seed-style MNIST handler (torch, torchvision, PIL) runs unmodified."""

    def setUp(self):
        ServerTestCase.setUp(self)
        try:
            for name in ("torch", "torchvision", "PIL.Image"):
                importlib.import_module(name)
        except Exception as e:  # pragma: no cover - depends on the machine
            need(self, "torch, torchvision or PIL not importable: %s" % e)

    def test_mnist_handler(self):
        import io
        import torch
        from PIL import Image
        d = self.model(MNIST_SERVICE, {"model_type": "PyTorch", "runtime": "python3.7",
                                       "warmup": {"file": "sample.png", "field": "images"}},
                       {"labels.txt": "zero one two three four five six seven eight nine"})
        ns = {"nn": torch.nn, "F": torch.nn.functional}
        exec(MNIST_NET, ns)
        net = ns["Net"]()
        with torch.no_grad():  # weights that answer "seven" whatever the image
            net.fc2.weight.zero_()
            net.fc2.bias.zero_()
            net.fc2.bias[7] = 10.0
        torch.save(net.state_dict(), os.path.join(d, "mnist.pth"))
        img = Image.new("L", (28, 28), 0)
        for i in range(5, 23):
            img.putpixel((14, i), 255)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        with open(os.path.join(d, "sample.png"), "wb") as f:
            f.write(buf.getvalue())
        s = self.serve(d)
        self.assertEqual(s.state["state"], "ready", s.log())
        self.assertEqual(s.state["model_path"], os.path.join(d, "mnist.pth"))
        boundary = "b" + uuid.uuid4().hex
        body = (b"--" + boundary.encode() + b'\r\nContent-Disposition: form-data; name="images"; filename="7.png"\r\n'
                b"Content-Type: image/png\r\n\r\n" + buf.getvalue() + b"\r\n--" + boundary.encode() + b"--\r\n")
        status, _, out = s.request("POST", "/", body, {"Content-Type": "multipart/form-data; boundary=" + boundary})
        self.assertEqual(status, 200, out)
        r = json.loads(out)
        self.assertEqual(r["mnist_result"], "seven")
        self.assertEqual(len(r["scores"]), 10)  # a tensor in the result: sent as a list
        self.assertIn("predicted 7", s.log())


if __name__ == "__main__":
    unittest.main()
