"""A small, fast HTTP/1.1 server on asyncio protocols.

One Connection per client connection (TCP or Unix) parses requests
itself: the request line and headers (at most max_header bytes, else 431),
bodies framed by Content-Length or chunked transfer coding (at most
max_body bytes, else 413), `Expect: 100-continue`, keep-alive (HTTP/1.1 by
default, HTTP/1.0 with `Connection: keep-alive`) and pipelining: a
connection handles one request at a time and answers in order; bytes that
arrive meanwhile wait in its buffer (reading pauses when they pass 256 KiB).

GET and HEAD of /health/live and /health/ready are answered on the event
loop, never queued behind a request: /health/live answers 200
{"status":"alive"} as long as the loop runs, unless HTTPServer's liveness
callback says why the server is not live (503 {"error_code":
"ATL.SVC.0513", "error_msg": <why>}). A POST (any path) is handed to
HTTPServer.dispatch, which runs it elsewhere (the worker threads of
model_service.server) and hands the answer back with
HTTPServer.complete(req, status, body) from any thread. Every other request
gets a JSON error {"error_code", "error_msg"}.

When HTTPServer has a secret, every request must carry the header
X-Atelier-Instance-Secret with exactly that value (compared in constant
time), whatever its method and path. It is checked as soon as the headers
are parsed, before the body is read: a request without it, or with another
value, is answered 403 {"error_code": "ATL.SVC.0512"} with `connection:
close` and the connection is closed (what follows on it, a body or
pipelined requests, is read and dropped for a moment, never answered);
the handler does not run. The header is removed from Request.headers once
checked, and its value is never logged or echoed.

HTTPServer.drain() starts a graceful stop: idle connections close at once,
a connection in the middle of a request closes after answering it.
"""

import asyncio
import hmac
import http
import json
import os
import threading
import time

from . import errors

__all__ = ["HTTPServer", "Connection", "Request"]

# The reason phrases come from the standard library's table.
_STATUS_LINES = {
    code: ("HTTP/1.1 %d %s\r\n" % (code, http.HTTPStatus(code).phrase)).encode()
    for code in (100, 200, 400, 403, 404, 405, 408, 413, 431, 500, 501, 503, 505)
}

_LIVE = b'{"status":"alive"}'
_READY = b'{"status":"ready"}'
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_JSON_HEADERS = b"server: atelier-model-service\r\ncontent-type: application/json\r\ncontent-length: "

# connection states
_HEAD, _BODY, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER, _DISCARD = range(7)

_PAUSE_AT = 256 * 1024      # buffered bytes of a busy connection before reading pauses
_MAX_CHUNK_LINE = 1024      # a chunk-size line (with extensions)
_LINGER = 2.0               # seconds to keep reading after an error response before closing
_HEX = frozenset(b"0123456789abcdefABCDEF")
_RID_CHARS = bytes(range(0x21, 0x7F))  # visible ASCII: what an X-Request-Id may hold
_SECRET_HEADER = b"x-atelier-instance-secret"
_SECRET_REFUSED = "the request does not carry this instance's secret"


class Request(object):
    """One parsed request. headers maps lowercased header names (bytes) to
    values (bytes; repeated headers joined with ", ")."""

    __slots__ = ("conn", "method", "target", "path", "http11", "headers", "body", "keep_alive",
                 "expect", "rid", "t0")

    def __init__(self, conn, method, target, path, http11, headers, keep_alive, t0):
        self.conn = conn
        self.method = method
        self.target = target
        self.path = path
        self.http11 = http11
        self.headers = headers
        self.body = b""
        self.keep_alive = keep_alive
        self.expect = False
        self.rid = None
        self.t0 = t0

    def header(self, name, default=""):
        """The value of header name (lowercase str) as str, or default."""
        v = self.headers.get(name.encode("latin-1"))
        return default if v is None else v.decode("latin-1")


def _loggable(b):
    """bytes from the request line as text safe to log (repr when they hold
    control or non-ASCII bytes)."""
    if b.translate(None, _RID_CHARS):
        return repr(b)[2:-1]
    return b.decode("ascii")


def _error_body(code, msg):
    return json.dumps({"error_code": code, "error_msg": msg}, ensure_ascii=False).encode("utf-8", "backslashreplace")


class _Reject(Exception):
    """A request that is answered with an error and the connection closed."""

    def __init__(self, status, code, msg):
        Exception.__init__(self, msg)
        self.status = status
        self.code = code
        self.msg = msg


class HTTPServer(object):
    """State shared by the connections of one listening socket.

    dispatch(req) is called on the event loop for every complete POST; the
    request is answered by calling complete(req, status, body) once, from
    any thread. access_log: write one line per request to stderr (failed
    or successful, health checks that succeed aside). secret (bytes or
    None): the value every request's X-Atelier-Instance-Secret header must
    have (see the module doc); on_refused(message) is called with one line
    (without the header's value) for every request refused for it.
    liveness: None, or a function called on the event loop for every GET
    or HEAD of /health/live that returns None (live) or why the server is
    not live (answered 503 STUCK).
    """

    def __init__(self, loop, dispatch, max_header=64 * 1024, max_body=64 * 1024 * 1024,
                 keepalive_timeout=200.0, request_timeout=60.0, access_log=True, log_fd=2,
                 secret=None, on_refused=None, liveness=None):
        if secret is not None and not isinstance(secret, bytes):
            raise TypeError("secret must be bytes")
        if secret == b"":
            raise ValueError("secret must not be empty")
        self.secret = secret
        self.on_refused = on_refused
        self.liveness = liveness
        self.loop = loop
        self.dispatch = dispatch
        self.max_header = max_header
        self.max_body = max_body
        self.keepalive_timeout = keepalive_timeout
        self.request_timeout = request_timeout
        self.access_log = access_log
        self.log_fd = log_fd
        self.conns = set()
        self.ready = True
        self.draining = False
        self.inflight = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._results = []
        self._wake_pending = False
        self._access = []
        self._access_pending = False
        self._date_sec = -1
        self._date_line = b""
        self._stamp_sec = -1
        self._stamp = ""
        self._rid_prefix = "%x-" % (os.getpid() & 0xFFFFFF)
        self._rid_next = 0
        self._sweeper = None

    def protocol(self):
        """The protocol factory for loop.create_server."""
        return Connection(self)

    # ---- answers from other threads

    def complete(self, req, status, body):
        """Answer req (from any thread): status and a JSON body (bytes)."""
        with self._lock:
            self._results.append((req, status, body))
            if self._wake_pending:
                return
            self._wake_pending = True
        try:
            self.loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:
            pass  # the loop is closed: the process is exiting

    def _deliver(self):
        with self._lock:
            items = self._results
            self._results = []
            self._wake_pending = False
        for req, status, body in items:
            req.conn.finish(req, status, body)

    # ---- helpers for connections

    def refused(self, req, missing):
        """Report a request refused for the instance secret (never its value)."""
        if self.on_refused is None:
            return
        try:
            self.on_refused("refused request %s %s %s (403 %s): %s" % (
                req.rid, _loggable(req.method), _loggable(req.target), errors.BAD_SECRET,
                "no X-Atelier-Instance-Secret header" if missing
                else "the X-Atelier-Instance-Secret header does not match this instance's secret"))
        except Exception:
            pass

    def next_rid(self):
        self._rid_next += 1
        return self._rid_prefix + str(self._rid_next)

    def date_line(self, now):
        sec = int(now)
        if sec != self._date_sec:
            self._date_sec = sec
            self._date_line = ("date: %s\r\n" % time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                                                               time.gmtime(sec))).encode()
        return self._date_line

    def log_access(self, req, method, path, status, nbytes, rid):
        now = time.time()
        sec = int(now)
        if sec != self._stamp_sec:
            self._stamp_sec = sec
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        ms = (time.monotonic() - req.t0) * 1000.0 if req is not None else 0.0
        self._access.append("%s.%03dZ INFO model_service.access: %s %s %d %.2fms %dB rid=%s\n" % (
            self._stamp, int((now - sec) * 1000), method, path, status, ms, nbytes, rid))
        if not self._access_pending:
            self._access_pending = True
            self.loop.call_soon(self.flush_access)

    def flush_access(self):
        self._access_pending = False
        if not self._access:
            return
        data = "".join(self._access).encode("utf-8", "backslashreplace")
        self._access = []
        try:
            while data:
                n = os.write(self.log_fd, data)
                data = data[n:]
        except OSError:
            pass  # the log reader went away; serving goes on

    # ---- lifecycle

    def start(self):
        """Start the timer that closes idle and stalled connections."""
        period = max(0.05, min(1.0, self.keepalive_timeout / 4.0, self.request_timeout / 4.0))
        self._sweeper = self.loop.call_later(period, self._sweep, period)

    def _sweep(self, period):
        now = time.monotonic()
        for c in list(self.conns):
            c.check_timeouts(now)
        self._sweeper = self.loop.call_later(period, self._sweep, period)

    def drain(self):
        """Stop taking requests: /health/ready answers 503, idle
        connections close now, the others after their current request."""
        self.draining = True
        self.ready = False
        for c in list(self.conns):
            c.close_if_idle()

    def stop(self):
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for c in list(self.conns):
            c.abort()
        self.flush_access()


class Connection(asyncio.Protocol):
    """The asyncio protocol of one client connection (see the module doc)."""

    __slots__ = ("srv", "t", "buf", "state", "req", "chunks", "need", "total", "busy", "closed",
                 "paused_read", "paused_write", "last", "started", "peer_eof", "trailer")

    def __init__(self, srv):
        self.srv = srv
        self.t = None
        self.buf = b""
        self.state = _HEAD
        self.req = None
        self.chunks = None
        self.need = 0
        self.total = 0
        self.busy = False
        self.closed = False
        self.paused_read = False
        self.paused_write = False
        self.last = time.monotonic()
        self.started = 0.0
        self.peer_eof = False
        self.trailer = 0

    # ---- asyncio.Protocol

    def connection_made(self, transport):
        self.t = transport
        self.srv.conns.add(self)
        if self.srv.draining:
            self.abort()

    def connection_lost(self, exc):
        self.closed = True
        self.srv.conns.discard(self)

    def pause_writing(self):
        self.paused_write = True

    def resume_writing(self):
        self.paused_write = False
        if not self.busy and self.buf and not self.closed:
            self._parse()

    def eof_received(self):
        self.peer_eof = True
        if self.busy:
            return True  # half-closed: answer the request in flight, then close
        return False

    def data_received(self, data):
        if self.state == _DISCARD or self.closed:
            return
        now = time.monotonic()
        self.last = now
        if self.buf:
            self.buf += data
        else:
            if self.state == _HEAD:
                self.started = now
            self.buf = data
        if self.busy or self.paused_write:
            if len(self.buf) > _PAUSE_AT and not self.paused_read:
                self.paused_read = True
                self.t.pause_reading()
            return
        self._parse()

    # ---- parsing

    def _parse(self):
        try:
            self._parse_loop()
        except _Reject as e:
            self._reject(e.status, e.code, e.msg)

    def _parse_loop(self):
        srv = self.srv
        while not self.busy and not self.closed and not self.paused_write:
            state = self.state
            if state == _HEAD:
                buf = self.buf
                if not buf:
                    return
                if buf[0] == 13 or buf[0] == 10:
                    buf = self.buf = buf.lstrip(b"\r\n")  # empty lines before a request (RFC 9112 2.2)
                    if not buf:
                        return
                i = buf.find(b"\r\n\r\n")
                if i < 0:
                    if len(buf) > srv.max_header:
                        raise _Reject(431, errors.HEADERS_TOO_LARGE,
                                      "the request line and headers exceed %d bytes" % srv.max_header)
                    return
                if i > srv.max_header:
                    raise _Reject(431, errors.HEADERS_TOO_LARGE,
                                  "the request line and headers exceed %d bytes" % srv.max_header)
                self.buf = buf[i + 4:]
                self._head(buf[:i])
            elif state == _BODY:
                buf = self.buf
                if len(buf) >= self.need:
                    if self.chunks:
                        self.chunks.append(buf[:self.need])
                        body = b"".join(self.chunks)
                    else:
                        body = buf[:self.need]
                    self.buf = buf[self.need:]
                    self.chunks = None
                    self.req.body = body
                    self._complete()
                else:
                    if buf:
                        if self.chunks is None:
                            self.chunks = []
                        self.chunks.append(buf)
                        self.need -= len(buf)
                        self.buf = b""
                    return
            elif state == _CHUNK_SIZE:
                buf = self.buf
                i = buf.find(b"\r\n")
                if i < 0:
                    if len(buf) > _MAX_CHUNK_LINE:
                        raise _Reject(400, errors.BAD_REQUEST, "a chunk-size line is longer than %d bytes"
                                      % _MAX_CHUNK_LINE)
                    return
                line = buf[:i]
                self.buf = buf[i + 2:]
                size = line.split(b";", 1)[0].strip(b" \t")
                if not size or len(size) > 15 or not _HEX.issuperset(size):
                    raise _Reject(400, errors.BAD_REQUEST, "invalid chunk size %r" % line[:40])
                n = int(size, 16)
                if n == 0:
                    self.state = _TRAILER
                    self.trailer = 0
                    continue
                self.total += n
                if self.total > srv.max_body:
                    raise _Reject(413, errors.BODY_TOO_LARGE,
                                  "the request body exceeds %d bytes" % srv.max_body)
                self.need = n
                self.state = _CHUNK_DATA
            elif state == _CHUNK_DATA:
                buf = self.buf
                if not buf:
                    return
                if len(buf) >= self.need:
                    self.chunks.append(buf[:self.need])
                    self.buf = buf[self.need:]
                    self.state = _CHUNK_CRLF
                else:
                    self.chunks.append(buf)
                    self.need -= len(buf)
                    self.buf = b""
                    return
            elif state == _CHUNK_CRLF:
                buf = self.buf
                if len(buf) < 2:
                    return
                if buf[:2] != b"\r\n":
                    raise _Reject(400, errors.BAD_REQUEST, "a chunk's data is not followed by CRLF")
                self.buf = buf[2:]
                self.state = _CHUNK_SIZE
            elif state == _TRAILER:
                buf = self.buf
                i = buf.find(b"\r\n")
                if i < 0:
                    if self.trailer + len(buf) > srv.max_header:
                        raise _Reject(431, errors.HEADERS_TOO_LARGE, "the trailer fields are too large")
                    return
                self.buf = buf[i + 2:]
                self.trailer += i + 2
                if self.trailer > srv.max_header:
                    raise _Reject(431, errors.HEADERS_TOO_LARGE, "the trailer fields are too large")
                if i == 0:
                    self.req.body = b"".join(self.chunks)
                    self.chunks = None
                    self._complete()
            else:
                return

    def _head(self, head):
        srv = self.srv
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise _Reject(400, errors.BAD_REQUEST, "malformed request line %r" % lines[0][:100])
        method, target, version = parts
        if version == b"HTTP/1.1":
            http11 = True
        elif version == b"HTTP/1.0":
            http11 = False
        elif version.startswith(b"HTTP/") and len(version) == 8:
            raise _Reject(505, errors.BAD_VERSION, "HTTP version %s is not supported; use HTTP/1.1"
                          % version[5:].decode("latin-1"))
        else:
            raise _Reject(400, errors.BAD_REQUEST, "malformed request line %r" % lines[0][:100])
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or b" " in name or b"\t" in name or b"\r" in line or b"\n" in line:
                raise _Reject(400, errors.BAD_REQUEST, "malformed header line %r" % line[:100])
            name = name.lower()
            value = value.strip(b" \t")
            prev = headers.get(name)
            if prev is None:
                headers[name] = value
            elif name == b"content-length":
                if prev != value:
                    raise _Reject(400, errors.BAD_REQUEST, "conflicting Content-Length headers")
            else:
                headers[name] = prev + b", " + value
        if target[0] != 47:  # "/"
            if target.startswith(b"http://") or target.startswith(b"https://"):
                slash = target.find(b"/", target.find(b"//") + 2)
                target = target[slash:] if slash > 0 else b"/"
            elif target != b"*":
                raise _Reject(400, errors.BAD_REQUEST, "malformed request target %r" % target[:100])
        q = target.find(b"?")
        path = target if q < 0 else target[:q]
        conn = headers.get(b"connection")
        if conn is None:
            keep = http11
        else:
            tokens = [t.strip() for t in conn.lower().split(b",")]
            if b"close" in tokens:
                keep = False
            else:
                keep = http11 or b"keep-alive" in tokens
        req = Request(self, method, target, path, http11, headers, keep, time.monotonic())
        rid = headers.get(b"x-request-id")
        if rid is not None and 0 < len(rid) <= 128 and not rid.translate(None, _RID_CHARS):
            req.rid = rid.decode("ascii")
        else:
            req.rid = srv.next_rid()
        self.req = req
        secret = srv.secret
        if secret is not None:
            given = headers.pop(_SECRET_HEADER, None)  # checked here; nothing after sees it
            if given is None or not hmac.compare_digest(given, secret):
                srv.refused(req, given is None)
                raise _Reject(403, errors.BAD_SECRET, _SECRET_REFUSED)
        te = headers.get(b"transfer-encoding")
        cl = headers.get(b"content-length")
        if te is not None:
            if cl is not None:
                raise _Reject(400, errors.BAD_REQUEST, "both Transfer-Encoding and Content-Length are set")
            if te.lower() != b"chunked":
                raise _Reject(501, errors.BAD_TRANSFER_ENCODING,
                              "Transfer-Encoding %r is not supported; send the body with Content-Length "
                              "or chunked" % te.decode("latin-1"))
            self._expect_continue(headers)
            self.chunks = []
            self.total = 0
            self.state = _CHUNK_SIZE
            return
        if cl is not None:
            if not cl.isdigit() or len(cl) > 18:
                raise _Reject(400, errors.BAD_REQUEST, "invalid Content-Length %r" % cl[:40])
            n = int(cl)
            if n > srv.max_body:
                raise _Reject(413, errors.BODY_TOO_LARGE,
                              "the request body (%d bytes) exceeds %d bytes" % (n, srv.max_body))
            if n:
                if len(self.buf) < n:
                    self._expect_continue(headers)
                self.need = n
                self.chunks = None
                self.state = _BODY
                return
        self._complete()

    def _expect_continue(self, headers):
        exp = headers.get(b"expect")
        if exp is not None and exp.lower() == b"100-continue" and self.req.http11 and not self.buf:
            self.t.write(_CONTINUE)

    # ---- answering

    def _complete(self):
        """The request in self.req is complete: route it."""
        req = self.req
        self.req = None
        self.state = _HEAD
        self.started = time.monotonic()
        srv = self.srv
        srv.requests += 1
        method = req.method
        if method == b"POST":
            self.busy = True
            srv.inflight += 1
            srv.dispatch(req)
            return
        if method == b"GET" or method == b"HEAD":
            path = req.path
            if path == b"/health/live":
                why = srv.liveness() if srv.liveness is not None else None
                if why is None:
                    self._answer(req, 200, _LIVE, False)
                else:
                    self._answer(req, 503, _error_body(errors.STUCK, why), True)
                return
            if path == b"/health/ready":
                if srv.ready:
                    self._answer(req, 200, _READY, False)
                else:
                    self._answer(req, 503, _error_body(errors.NOT_READY, "the model is not ready: %s" % (
                        "the server is shutting down" if srv.draining else "loading")), True)
                return
            self._answer(req, 404, _error_body(errors.NOT_FOUND, "no such path: %s; POST any path to run "
                                                "the model, GET /health/live or /health/ready"
                                                % path.decode("latin-1")), True)
            return
        self._answer(req, 405, _error_body(errors.METHOD_NOT_ALLOWED, "method %s is not allowed: POST runs "
                                            "the model, GET and HEAD serve /health/live and /health/ready"
                                            % method.decode("latin-1")), True, b"allow: POST, GET, HEAD\r\n")

    def _answer(self, req, status, body, log, extra=b""):
        srv = self.srv
        keep = req.keep_alive and not srv.draining and not self.peer_eof
        parts = [_STATUS_LINES[status], srv.date_line(time.time()), _JSON_HEADERS,
                 str(len(body)).encode(), b"\r\nx-request-id: ", req.rid.encode(), b"\r\n"]
        if extra:
            parts.append(extra)
        if not keep:
            parts.append(b"connection: close\r\n")
        elif not req.http11:
            parts.append(b"connection: keep-alive\r\n")
        parts.append(b"\r\n")
        if req.method != b"HEAD":
            if len(body) < 65536:
                parts.append(body)
                self.t.write(b"".join(parts))
            else:
                self.t.write(b"".join(parts))
                self.t.write(body)
        else:
            self.t.write(b"".join(parts))
        if (log or status != 200) and srv.access_log:
            srv.log_access(req, _loggable(req.method), _loggable(req.target), status, len(body), req.rid)
        if not keep:
            self._close_after_write()

    def finish(self, req, status, body):
        """Answer the POST request req (on the event loop)."""
        self.srv.inflight -= 1
        self.busy = False
        if self.closed:
            return
        self._answer(req, status, body, True)
        if self.closed or self.state == _DISCARD:
            return
        if self.paused_read:
            self.paused_read = False
            self.t.resume_reading()
        if self.buf:
            self.started = time.monotonic()
            self._parse()

    def _reject(self, status, code, msg):
        """Answer a request that cannot be read with an error and close
        the connection once the client stops sending (at most _LINGER s)."""
        srv = self.srv
        req = self.req
        rid = req.rid if req is not None else srv.next_rid()
        body = _error_body(code, msg)
        head = b"".join([_STATUS_LINES[status], srv.date_line(time.time()), _JSON_HEADERS,
                         str(len(body)).encode(), b"\r\nx-request-id: ", rid.encode(),
                         b"\r\nconnection: close\r\n\r\n"])
        self.t.write(head + body)
        if srv.access_log:
            if req is not None:
                srv.log_access(req, _loggable(req.method), _loggable(req.target), status, len(body), rid)
            else:
                srv.log_access(None, "-", "-", status, len(body), rid)
        self.req = None
        self.chunks = None
        self.buf = b""
        self._close_after_write()

    def _close_after_write(self):
        self.state = _DISCARD
        self.buf = b""
        if self.paused_read:
            self.paused_read = False
            self.t.resume_reading()
        if self.t.can_write_eof() and not self.peer_eof:
            try:
                self.t.write_eof()
            except (OSError, RuntimeError):
                self.t.close()
                return
            self.srv.loop.call_later(_LINGER, self.t.close)
        else:
            self.t.close()

    # ---- housekeeping

    def check_timeouts(self, now):
        if self.busy or self.closed or self.state == _DISCARD:
            return
        if self.state == _HEAD and not self.buf:
            if now - self.last > self.srv.keepalive_timeout:
                self.t.close()
        elif now - self.started > self.srv.request_timeout:
            self._reject(408, errors.REQUEST_TIMEOUT, "the request was not received within %gs"
                         % self.srv.request_timeout)

    def close_if_idle(self):
        if not self.busy and not self.closed and self.state == _HEAD and not self.buf:
            self.t.close()

    def abort(self):
        if self.t is not None and not self.closed:
            self.t.abort()
