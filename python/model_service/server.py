"""The instance server: `python -m model_service.server` serves one model
directory over HTTP.

    python -m model_service.server --model-dir DIR --model-name NAME
        [--host 127.0.0.1] [--port 8080 | 0 | --listen-fd N] [--secret-fd N]
        [--ready-file PATH] [--workers 1] [--max-body 64MiB] [--max-header 64KiB]
        [--keepalive-timeout 200] [--request-timeout 60] [--drain-timeout 30]
        [--stuck-after SECONDS] [--no-access-log]

Listening: on --host:--port (TCP), or with --listen-fd N on the inherited,
already bound and listening stream socket N (a Unix socket that the runner
created outside the sandbox; a TCP one works too). --listen-fd and --port
cannot be used together; --host is ignored with --listen-fd. Before the
handler is loaded, N is checked: not a listening SOCK_STREAM socket of
AF_UNIX, AF_INET or AF_INET6 fails start-up at stage "bind" ("--listen-fd
3 is not a listening stream socket"). It is made non-inheritable, so the
handler's child processes do not hold it.

Instance secret: with --secret-fd N the secret is read from fd N (a pipe
or file, read to EOF, at most 4096 bytes, surrounding whitespace stripped)
and N closed, before the handler module is imported; an empty secret (or
one with control characters, or an unreadable fd) fails start-up at stage
"load". Then EVERY request (POST, the health paths, anything) must carry
the header X-Atelier-Instance-Secret with exactly that value, else it is
answered 403 {"error_code": "ATL.SVC.0512", "error_msg": "the request does
not carry this instance's secret"} with `connection: close`, the
connection is closed and the handler does not run; one warning line per
refused request is logged, without the header's value. The header is
never logged and never reaches the handler (which gets the decoded body
only). Without --secret-fd nothing is checked.

Start-up: read DIR/config.json (optional; model_type and warmup are used),
import DIR/customize_service.py with DIR first on sys.path, take the ONE
class defined there that subclasses a model_service base class, and create
it as ModelArts does: cls(model_name, model_path), where model_path is the
first *.pth/*.pt file (sorted) at the top of DIR for PyTorch (model_type
PyTorch or a PTServingBaseService handler) and DIR otherwise. Then, when
config.json has "warmup": {"json": {...}} or {"file": "<path in DIR>",
"field": "images"}, run that request through the handler. Only then bind
the port (0: any free port), or start accepting on --listen-fd, and write
the ready file, atomically (a temporary file renamed):

    {"state": "ready", "port": N, "pid": P, "handler": "customize_service.Cls", "model_path": "..."}

or, with --listen-fd and a Unix socket, "socket": "<its path>" (the path
getsockname() gives; "@name" for an abstract one, "" for an unnamed one)
instead of "port" (a TCP socket passed as --listen-fd gives "port"):

    {"state": "ready", "socket": "/run/x/http.sock", "pid": P, "handler": "...", "model_path": "..."}

or, when a step fails, {"state": "failed", "stage": "load" | "warmup" | "bind",
"error": "<ExcType>: <message>", "traceback": "..."} and exit with status 3.

Serving: POST to any path runs the handler's inference(data) in one of
--workers threads (default 1: requests queue, as one ModelArts model
instance per process) and answers 200 with the JSON of the result; an
exception answers 500 {"error_code": "ATL.SVC.0500", "error_msg":
"<ExcType>: <message>"} and logs the traceback with the request id (the
X-Request-Id header, else one generated, echoed in the response). How the
body becomes `data` is described in model_service._body; the error codes
are listed in model_service.errors. GET /health/ready answers 200
{"status": "ready"} (503 while shutting down). GET /health/live is the
liveness probe: it is answered on the event loop, never queued behind a
request, so it answers while handlers run (a handler stuck in time.sleep or
in a Python loop lets the loop run: the interpreter switches threads every
few milliseconds); it answers 200 {"status": "alive"}, except with
--stuck-after S when every worker thread has been running its current
request for more than S seconds: then 503 {"error_code": "ATL.SVC.0513",
"error_msg": "every worker (1 of 1) has been running one request for more
than 40s (the shortest for 41.2s): the handler is stuck"}, as the instance
can serve nothing more.
(The runner passes the service's request timeout: past it the gateway has
answered 504 anyway.) A handler that holds the interpreter lock in C code,
a deadlock or a stopped process leave the probe with no answer at all.

SIGTERM (or SIGINT): stop listening, close idle connections, finish the
requests in progress (at most --drain-timeout seconds) and exit 0.

Logs go to stderr: start-up, failures with tracebacks, and one access line
per request (`... INFO model_service.access: POST / 200 1.20ms 17B rid=...`;
successful health checks are not logged) unless --no-access-log.
"""

import argparse
import asyncio
import gc
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
import traceback

from . import _loader
from ._body import decode, encode
from ._http import HTTPServer, _error_body, _loggable
from .errors import HANDLER_ERROR, HTTPError
from .log_util import get_logger

__all__ = ["main", "write_ready_file", "EXIT_FAILED"]

EXIT_FAILED = 3  # a failed ready file was written
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_MAX_ERROR_MSG = 4096
_MAX_SECRET = 4096


def _size(text):
    """A byte size: 123, 64KiB, 12MiB, 1GiB, 12MB (decimal), 1.5MiB."""
    units = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000 ** 2, "mb": 1000 ** 2,
             "mib": 1024 ** 2, "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1024 ** 3}
    t = text.strip().lower()
    i = len(t)
    while i > 0 and t[i - 1].isalpha():
        i -= 1
    num, unit = t[:i].strip(), t[i:]
    try:
        if unit not in units:
            raise ValueError
        n = int(float(num) * units[unit])
    except ValueError:
        raise argparse.ArgumentTypeError("invalid size %r (use bytes or a unit: 64KiB, 12MiB, 1GiB)" % text)
    if n <= 0:
        raise argparse.ArgumentTypeError("size %r must be positive" % text)
    return n


def _positive_int(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1, not %d" % n)
    return n


def _seconds(text):
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text)
    if not f > 0:
        raise argparse.ArgumentTypeError("must be positive, not %r" % text)
    return f


def _port(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a port number" % text)
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError("port %d is out of range 0-65535" % n)
    return n


def _fd(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a file descriptor number" % text)
    if n < 0:
        raise argparse.ArgumentTypeError("file descriptor %d is negative" % n)
    return n


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m model_service.server",
                                description="Serve a ModelArts-style model directory over HTTP.")
    p.add_argument("--model-dir", required=True, help="directory with config.json and customize_service.py")
    p.add_argument("--model-name", required=True, help="model name passed to the handler")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1; ignored with --listen-fd)")
    p.add_argument("--port", type=_port, help="port to listen on (default 8080); 0 picks a free one")
    p.add_argument("--listen-fd", type=_fd, metavar="N",
                   help="serve on the inherited listening stream socket N (Unix or TCP) instead of --port")
    p.add_argument("--secret-fd", type=_fd, metavar="N",
                   help="read the instance secret from fd N (to EOF); every request must then carry it "
                        "in the X-Atelier-Instance-Secret header")
    p.add_argument("--ready-file", help="where to write the ready/failed JSON state")
    p.add_argument("--workers", type=_positive_int, default=1,
                   help="threads running the handler (default 1; requests queue)")
    p.add_argument("--max-body", type=_size, default=64 * 1024 * 1024, help="largest request body (64MiB)")
    p.add_argument("--max-header", type=_size, default=64 * 1024,
                   help="largest request line and headers (64KiB)")
    p.add_argument("--keepalive-timeout", type=_seconds, default=200.0,
                   help="seconds an idle keep-alive connection stays open (200)")
    p.add_argument("--request-timeout", type=_seconds, default=60.0,
                   help="seconds to receive a whole request (60)")
    p.add_argument("--drain-timeout", type=_seconds, default=30.0,
                   help="seconds to finish requests in progress after SIGTERM (30)")
    p.add_argument("--stuck-after", type=_seconds, metavar="SECONDS",
                   help="GET /health/live answers 503 when every worker has been running one request "
                        "for longer than this (default: never)")
    p.add_argument("--no-access-log", dest="access_log", action="store_false",
                   help="do not log one line per request")
    args = p.parse_args(argv)
    if args.listen_fd is not None:
        if args.port is not None:
            p.error("--listen-fd and --port cannot be used together (the socket is already bound)")
        if args.secret_fd is not None and args.secret_fd == args.listen_fd:
            p.error("--listen-fd and --secret-fd name the same fd %d" % args.listen_fd)
    elif args.port is None:
        args.port = 8080
    args.host_given = args.host is not None
    if args.host is None:
        args.host = "127.0.0.1"
    return args


def write_ready_file(path, state):
    """Write state (a dict) as JSON to path atomically: into a temporary
    file in the same directory, then renamed over path."""
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    data = (json.dumps(state, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _internal_frame(filename):
    return filename.startswith(_PKG_DIR + os.sep) or filename.startswith("<frozen importlib")


def format_exception(exc):
    """The traceback of exc without the server's own frames (the handler's
    frames, and for a SyntaxError the offending line, stay)."""
    te = traceback.TracebackException.from_exception(exc)
    frames = [f for f in te.stack if not _internal_frame(f.filename)]
    te.stack = traceback.StackSummary.from_list(frames)
    return "".join(te.format())


def error_text(exc):
    """`<ExcType>: <message>` (the type alone when the message is empty)."""
    try:
        msg = str(exc)
    except Exception:  # a broken __str__
        msg = ""
    if len(msg) > _MAX_ERROR_MSG:
        msg = msg[:_MAX_ERROR_MSG] + "..."
    name = type(exc).__name__
    return "%s: %s" % (name, msg) if msg else name


class _Workers(object):
    """Threads that run requests through the handler in arrival order."""

    def __init__(self, n, service, http, log):
        self.service = service
        self.http = http
        self.log = log
        self.q = queue.SimpleQueue()
        # since[i]: when worker i took its current request (time.monotonic()), 0.0 while idle
        self.since = [0.0] * n
        self.threads = [threading.Thread(target=self._loop, args=(i,), name="model-worker-%d" % i, daemon=True)
                        for i in range(n)]

    def start(self):
        for t in self.threads:
            t.start()

    def submit(self, req):
        self.q.put(req)

    def stop(self, timeout=1.0):
        for _ in self.threads:
            self.q.put(None)
        end = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, end - time.monotonic()))

    def stuck(self, limit):
        """Why the server is not live: every worker has been running its
        current request for more than limit seconds; else None."""
        since = list(self.since)
        if not since or not all(since):
            return None
        age = time.monotonic() - max(since)  # the youngest request's
        if age <= limit:
            return None
        return ("every worker (%d of %d) has been running one request for more than %gs "
                "(the shortest for %.1fs): the handler is stuck" % (len(since), len(since), limit, age))

    def _loop(self, i):
        q = self.q
        run = self.run
        complete = self.http.complete
        since = self.since
        monotonic = time.monotonic
        while True:
            req = q.get()
            if req is None:
                return
            since[i] = monotonic()
            status, body = run(req)
            since[i] = 0.0
            complete(req, status, body)

    def run(self, req):
        """(status, JSON body) of one request."""
        try:
            data = decode(req.body, req.header("content-type"))
        except HTTPError as e:
            return e.status, _error_body(e.code, e.message)
        try:
            result = self.service.inference(data)
        except BaseException as e:  # the handler's error: answer it, keep serving
            self._failed(req, e)
            return 500, _error_body(HANDLER_ERROR, error_text(e))
        try:
            return 200, encode(result)
        except BaseException as e:
            self._failed(req, e)
            return 500, _error_body(HANDLER_ERROR, "%s (the handler's result is not JSON-serialisable)"
                                    % error_text(e))

    def _failed(self, req, e):
        try:
            self.log.error("request %s %s %s failed: %s\n%s", req.rid, _loggable(req.method),
                           _loggable(req.target), error_text(e), format_exception(e).rstrip("\n"))
        except Exception:
            pass


def _fail(log, ready_file, stage, exc, tb):
    err = error_text(exc)
    log.error("%s failed: %s%s", stage, err, ("\n" + tb.rstrip("\n")) if tb else "")
    if ready_file:
        try:
            write_ready_file(ready_file, {"state": "failed", "stage": stage, "error": err, "traceback": tb,
                                          "pid": os.getpid()})
        except OSError as e:
            log.error("cannot write the ready file %s: %s", ready_file, e)
    return EXIT_FAILED


class _Failure(Exception):
    """A start-up step failed: stage and the exception."""

    def __init__(self, stage, exc):
        Exception.__init__(self, stage)
        self.stage = stage
        self.exc = exc


def read_secret(fd):
    """The instance secret (bytes) read from fd to EOF, whitespace around
    it stripped; fd is closed. Raises OSError or ValueError (the messages
    never hold the secret)."""
    what = "--secret-fd %d" % fd
    chunks = []
    n = 0
    try:
        while True:
            try:
                b = os.read(fd, 65536)
            except InterruptedError:
                continue
            except OSError as e:
                raise OSError(e.errno, "cannot read the instance secret from %s: %s" % (what, e.strerror))
            if not b:
                break
            n += len(b)
            if n > _MAX_SECRET:
                raise ValueError("the instance secret read from %s is longer than %d bytes" % (what, _MAX_SECRET))
            chunks.append(b)
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    secret = b"".join(chunks).strip()
    if not secret:
        raise ValueError("the instance secret read from %s is empty" % what)
    if any(c < 0x20 or c == 0x7F for c in secret):
        raise ValueError("the instance secret read from %s holds control characters; it cannot be "
                         "sent in a header" % what)
    return secret


def listen_socket(fd):
    """The socket object of the inherited listening stream socket fd,
    non-blocking and non-inheritable. Raises OSError when fd is not one."""
    what = "--listen-fd %d" % fd
    try:
        sock = socket.socket(fileno=fd)
    except OSError as e:
        raise OSError(e.errno, "%s is not a listening stream socket (%s)" % (what, e.strerror or e))
    why = None
    try:
        if sock.family not in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6):
            why = "address family %s" % getattr(sock.family, "name", sock.family)
        elif sock.type != socket.SOCK_STREAM:
            why = "type %s, not SOCK_STREAM" % getattr(sock.type, "name", sock.type)
        elif not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            why = "not listening"
    except OSError as e:
        why = e.strerror or str(e)
    if why is not None:
        sock.detach()  # the fd stays the parent's business
        raise OSError("%s is not a listening stream socket (%s)" % (what, why))
    sock.set_inheritable(False)
    sock.setblocking(False)
    return sock


def _unix_path(name):
    """The path of a Unix socket address as text: "@name" for an abstract one."""
    if isinstance(name, bytes):
        if name[:1] == b"\0":
            return "@" + name[1:].decode("utf-8", "backslashreplace")
        return name.decode("utf-8", "backslashreplace")
    return name or ""


def load(args, log):
    """Load the model directory: (service, handler class, model_path).
    Raises _Failure with the stage and the LoadError or handler exception."""
    model_dir = os.path.abspath(args.model_dir)
    stage = "load"
    try:
        cfg = _loader.read_config(model_dir)
        module = _loader.import_handler_module(model_dir)
        cls = _loader.find_handler_class(module)
        model_path = _loader.model_path_for(model_dir, cls, cfg)
        log.info("loading model %s: handler %s.%s, model_path %s", args.model_name, cls.__module__,
                 cls.__name__, model_path)
        t0 = time.monotonic()
        service = _loader.instantiate(cls, args.model_name, model_path)
        log.info("handler created in %.2fs", time.monotonic() - t0)
        if "warmup" in cfg:
            stage = "warmup"
            t0 = time.monotonic()
            data = _loader.warmup_data(model_dir, cfg["warmup"])
            encode(service.inference(data))
            log.info("warmup request succeeded in %.2fs", time.monotonic() - t0)
    except KeyboardInterrupt:
        raise
    except _loader.LoadError as e:
        raise _Failure(e.stage, e)
    except BaseException as e:  # the handler's code: SystemExit included
        raise _Failure(stage, e)
    return service, cls, model_path


def main(argv=None):
    """Run the server; returns the exit status (0 after SIGTERM, 3 when
    start-up failed)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log = get_logger("model_service")
    secret = None
    if args.secret_fd is not None:  # before any handler code runs: it never sees the fd
        try:
            secret = read_secret(args.secret_fd)
        except (OSError, ValueError) as e:
            return _fail(log, args.ready_file, "load", e, "")
    sock = None
    if args.listen_fd is not None:
        try:
            sock = listen_socket(args.listen_fd)
        except OSError as e:
            return _fail(log, args.ready_file, "bind", e, "")
        if args.host_given:
            log.warning("--host %s is ignored: serving on --listen-fd %d", args.host, args.listen_fd)
    try:
        service, cls, model_path = load(args, log)
    except _Failure as f:
        tb = "" if isinstance(f.exc, _loader.LoadError) else format_exception(f.exc)
        return _fail(log, args.ready_file, f.stage, f.exc, tb)
    gc.collect()
    gc.freeze()  # the model's objects need no more collector passes

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return _serve(loop, args, log, service, cls, model_path, sock, secret)
    finally:
        loop.close()


def _serve(loop, args, log, service, cls, model_path, sock=None, secret=None):
    http = None
    workers = None

    def dispatch(req):
        workers.submit(req)

    liveness = None
    if args.stuck_after is not None:
        def liveness():
            return workers.stuck(args.stuck_after)

    http = HTTPServer(loop, dispatch, max_header=args.max_header, max_body=args.max_body,
                      keepalive_timeout=args.keepalive_timeout, request_timeout=args.request_timeout,
                      access_log=args.access_log, secret=secret, on_refused=log.warning, liveness=liveness)
    workers = _Workers(args.workers, service, http, log)
    try:
        if sock is None:
            server = loop.run_until_complete(loop.create_server(http.protocol, args.host, args.port,
                                                                backlog=1024, reuse_address=True))
        else:  # asyncio sets TCP_NODELAY on accepted TCP connections, not on Unix ones
            server = loop.run_until_complete(loop.create_server(http.protocol, sock=sock, backlog=1024))
    except (OSError, ValueError) as e:
        return _fail(log, args.ready_file, "bind", e, "")
    state = {"state": "ready"}
    lsock = server.sockets[0]
    if lsock.family == socket.AF_UNIX:
        path = _unix_path(lsock.getsockname())
        state["socket"] = path
        where = "unix socket %s" % path if path else "fd %d" % args.listen_fd
    else:
        name = lsock.getsockname()
        state["port"] = name[1]
        where = "%s:%d" % (args.host, name[1]) if sock is None else "%s:%d (fd %d)" % (
            name[0], name[1], args.listen_fd)
    workers.start()
    http.start()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    handler = "%s.%s" % (cls.__module__, cls.__name__)
    state.update(pid=os.getpid(), handler=handler, model_path=model_path)
    if args.ready_file:
        try:
            write_ready_file(args.ready_file, state)
        except OSError as e:
            log.error("cannot write the ready file %s: %s", args.ready_file, e)
            server.close()
            return EXIT_FAILED
    log.info("serving model %s (%s) on %s with %d worker thread(s)%s", args.model_name, handler, where,
             args.workers, "; requests must carry the instance secret" if secret is not None else "")

    async def run():
        await stop.wait()
        log.info("stopping: %d request(s) in progress, %d connection(s) open", http.inflight, len(http.conns))
        server.close()
        http.drain()
        deadline = loop.time() + args.drain_timeout
        while (http.inflight or http.conns) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if http.inflight:
            log.warning("stopping: %d request(s) still running after %gs; exiting anyway", http.inflight,
                        args.drain_timeout)
        http.stop()

    loop.run_until_complete(run())
    workers.stop()
    log.info("stopped after %d request(s)", http.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
