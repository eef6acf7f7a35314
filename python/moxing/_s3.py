"""A small S3 client on http.client: SigV4, path-style (or virtual-host)
URLs, one kept-alive connection per thread and endpoint, retries.

Settings come from the environment (S3_ENDPOINT or AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
AWS_DEFAULT_REGION) and are overridden by mox.file.set_auth. They are read
at each request, so a change of the environment takes effect at once.

Without keys in the environment, the keys come from the JSON file named by
ATELIER_CREDENTIALS_FILE (an AWS credential_process's output: AccessKeyId,
SecretAccessKey, SessionToken), which an Atelier notebook's runner renews
while the notebook runs: it is read again whenever it changed.
"""

import base64
import datetime
import email.utils
import hashlib
import http.client
import json
import os
import ssl
import threading
import time
import xml.etree.ElementTree as ET
from urllib.parse import unquote_plus, urlsplit
from xml.sax.saxutils import escape as xml_escape

from . import _sigv4
from ._errors import (MoxFileConfigException, MoxFileConnectionException,
                      MoxFileNotExistsException, MoxFileReadException,
                      MoxFileRespException)

MiB = 1 << 20
MIN_PART_SIZE = 5 * MiB
MAX_PARTS = 10000
USER_AGENT = "atelier-moxing/1.0"

DEFAULTS = {
    "retry": 3,
    "retry_wait": 0.5,
    "client_timeout": 120.0,
    "list_max_keys": 1000,
    "path_style": True,
    "ssl_verify": True,
    "multipart_threshold": 64 * MiB,
    "part_size": 16 * MiB,
}

CREDENTIALS_FILE_ENV = "ATELIER_CREDENTIALS_FILE"

_NOT_FOUND_CODES = ("NoSuchKey", "NoSuchBucket", "NotFound", "NoSuchUpload")
_RETRY_STATUS = (500, 502, 503, 504)


class Settings:
    """The resolved settings of one request."""

    __slots__ = ("scheme", "host", "port", "ak", "sk", "token", "region", "path_style",
                 "ssl_verify", "retry", "retry_wait", "timeout", "list_max_keys",
                 "multipart_threshold", "part_size")

    def conn_key(self):
        return (self.scheme, self.host, self.port, self.ssl_verify, self.timeout)

    def host_header(self, bucket=None):
        host = self.host
        if ":" in host:
            host = "[" + host + "]"
        if bucket and not self.path_style:
            host = bucket + "." + host
        default = 443 if self.scheme == "https" else 80
        if self.port != default:
            host += ":%d" % self.port
        return host

    def endpoint(self):
        return "%s://%s" % (self.scheme, self.host_header())


def _env_bool(name):
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    return v.strip().lower() not in ("0", "false", "no", "off")


def _as_bool(name, v):
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, str)):
        s = str(v).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
    raise MoxFileConfigException("set_auth: %s=%r is not a boolean" % (name, v))


def _as_number(name, v, kind, minimum):
    try:
        n = kind(v)
    except (TypeError, ValueError):
        raise MoxFileConfigException("set_auth: %s=%r is not a number" % (name, v)) from None
    if n < minimum:
        raise MoxFileConfigException("set_auth: %s=%r must be at least %s" % (name, v, minimum))
    return n


class _CredentialsFile:
    """The keys of a credentials file (CREDENTIALS_FILE_ENV), read again
    when the file changed (another inode after an atomic rename, another
    mtime or size)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stamp = None
        self._keys = ("", "", "")

    def keys(self, path):
        """(access key, secret key, session token) of the file at path."""
        try:
            st = os.stat(path)
            stamp = (path, st.st_ino, st.st_mtime_ns, st.st_size)
            with self._lock:
                if stamp == self._stamp:
                    return self._keys
            with open(path, "rb") as f:
                doc = json.loads(f.read(1 << 20).decode("utf-8"))
        except (OSError, ValueError) as e:
            raise MoxFileConfigException("cannot read the credentials file %s (%s): %s" % (
                path, CREDENTIALS_FILE_ENV, e)) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("AccessKeyId"), str) or not isinstance(
                doc.get("SecretAccessKey"), str):
            raise MoxFileConfigException("the credentials file %s (%s) has no AccessKeyId and SecretAccessKey" % (
                path, CREDENTIALS_FILE_ENV))
        token = doc.get("SessionToken")
        keys = (doc["AccessKeyId"], doc["SecretAccessKey"], token if isinstance(token, str) else "")
        with self._lock:
            self._stamp, self._keys = stamp, keys
        return keys


class Client:
    """The S3 client shared by every mox.file function. Thread-safe."""

    def __init__(self):
        self._overrides = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self._creds_file = _CredentialsFile()

    # ---- settings -------------------------------------------------------

    def set_auth(self, **kw):
        """Override settings; None values are ignored."""
        checked = {}
        for name, v in kw.items():
            if v is None:
                continue
            if name in ("ak", "sk", "security_token", "region"):
                v = str(v)
            elif name == "server":
                v = str(v).strip()
            elif name == "port":
                v = _as_number(name, v, int, 1)
            elif name in ("is_secure", "ssl_verify", "path_style"):
                v = _as_bool(name, v)
            elif name == "retry":
                v = _as_number(name, v, int, 0)
            elif name in ("retry_wait", "client_timeout"):
                v = _as_number(name, v, float, 0)
            elif name == "list_max_keys":
                v = _as_number(name, v, int, 1)
            elif name == "multipart_threshold":
                v = _as_number(name, v, int, 1)
            elif name == "part_size":
                v = _as_number(name, v, int, MIN_PART_SIZE)
            else:
                raise TypeError("set_auth() got an unexpected keyword argument %r" % name)
            checked[name] = v
        with self._lock:
            merged = dict(self._overrides)
            merged.update(checked)
            self._overrides = merged

    def reset_auth(self):
        """Forget every set_auth override (back to the environment)."""
        with self._lock:
            self._overrides = {}

    def settings(self):
        o = self._overrides
        env = os.environ
        s = Settings()
        endpoint = (env.get("S3_ENDPOINT") or env.get("AWS_ENDPOINT_URL_S3")
                    or env.get("AWS_ENDPOINT_URL") or "").strip()
        server = o.get("server") or endpoint
        if not server:
            raise MoxFileConfigException(
                "no OBS endpoint: set S3_ENDPOINT (a URL such as http://127.0.0.1:9000) "
                "or call mox.file.set_auth(server=..., port=..., is_secure=...)")
        secure = o.get("is_secure")
        if secure is None:
            secure = _env_bool("S3_USE_HTTPS")
        if "://" in server:
            u = urlsplit(server)
            scheme = u.scheme.lower()
            if scheme not in ("http", "https"):
                raise MoxFileConfigException("OBS endpoint %r: the scheme must be http or https" % server)
            if "is_secure" in o:
                scheme = "https" if o["is_secure"] else "http"
            host = u.hostname or ""
            try:
                port = u.port
            except ValueError:
                raise MoxFileConfigException("OBS endpoint %r has an invalid port" % server) from None
        else:
            scheme = "http" if secure is False else "https"
            host, port = server, None
            if host.count(":") == 1:
                host, p = host.split(":")
                port = _as_number("server port", p, int, 1)
            host = host.strip("[]").rstrip("/")
        if not host:
            raise MoxFileConfigException("OBS endpoint %r names no host" % server)
        if "port" in o:
            port = o["port"]
        s.scheme, s.host = scheme, host
        s.port = port or (443 if scheme == "https" else 80)
        ak = env.get("AWS_ACCESS_KEY_ID") or env.get("ACCESS_KEY_ID") or ""
        sk = env.get("AWS_SECRET_ACCESS_KEY") or env.get("SECRET_ACCESS_KEY") or ""
        token = env.get("AWS_SESSION_TOKEN") or env.get("AWS_SECURITY_TOKEN") or ""
        creds_file = (env.get(CREDENTIALS_FILE_ENV) or "").strip()
        if not ak and not sk and creds_file and not ("ak" in o and "sk" in o):
            ak, sk, file_token = self._creds_file.keys(creds_file)
            token = token or file_token
        s.ak = o.get("ak", ak)
        s.sk = o.get("sk", sk)
        s.token = o.get("security_token", token)
        s.region = o.get("region") or env.get("AWS_DEFAULT_REGION") or env.get("AWS_REGION") or "us-east-1"
        verify = o.get("ssl_verify")
        if verify is None:
            verify = _env_bool("S3_VERIFY_SSL")
        s.ssl_verify = DEFAULTS["ssl_verify"] if verify is None else verify
        s.path_style = o.get("path_style", DEFAULTS["path_style"])
        s.retry = o.get("retry", DEFAULTS["retry"])
        s.retry_wait = o.get("retry_wait", DEFAULTS["retry_wait"])
        s.timeout = o.get("client_timeout", DEFAULTS["client_timeout"])
        s.list_max_keys = min(o.get("list_max_keys", DEFAULTS["list_max_keys"]), 1000)
        s.multipart_threshold = o.get("multipart_threshold", DEFAULTS["multipart_threshold"])
        s.part_size = o.get("part_size", DEFAULTS["part_size"])
        return s

    # ---- connections ----------------------------------------------------

    def _conns(self):
        conns = getattr(self._local, "conns", None)
        if conns is None or conns.pid != os.getpid():
            # None yet, or inherited through fork (a DataLoader worker): a
            # child must not share its parent's sockets.
            conns = self._local.conns = _ConnPool()
        return conns

    def _conn(self, s):
        """This thread's connection to the endpoint and whether it is new."""
        conns = self._conns()
        key = s.conn_key()
        c = conns.get(key)
        if c is not None:
            return c, False
        if s.scheme == "https":
            ctx = ssl.create_default_context()
            if not s.ssl_verify:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            c = http.client.HTTPSConnection(s.host, s.port, timeout=s.timeout, context=ctx,
                                            blocksize=MiB)
        else:
            c = http.client.HTTPConnection(s.host, s.port, timeout=s.timeout, blocksize=MiB)
        conns[key] = c
        return c, True

    def _drop(self, s):
        c = self._conns().pop(s.conn_key(), None)
        if c is not None:
            c.close()

    # ---- requests -------------------------------------------------------

    def request(self, method, bucket, key=None, params=None, headers=None, body=None,
                sink=None, op=None):
        """Send one request and return a Response whose body is read.

        body is None, bytes or a FileSlice. With sink (a binary file opened
        for writing) a 2xx body is written there instead of kept; a retry
        truncates it first. Connection errors and 500/502/503/504 answers are
        retried; an error status raises (see raise_for)."""
        s = self.settings()
        params = list(params or [])
        if bucket and not s.path_style:
            path = "/" + (key or "")
        else:
            path = "/" + bucket + ("/" + key if key is not None else "")
        target = _sigv4.uri_encode(path, keep_slash=True)
        qs = _sigv4.query_string(params)
        if qs:
            target += "?" + qs
        payload_hash, length = _payload(body)
        attempt = 0
        stale_retried = False
        while True:
            amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            signed = {"host": s.host_header(bucket), "x-amz-date": amz_date,
                      "x-amz-content-sha256": payload_hash}
            if s.token:
                signed["x-amz-security-token"] = s.token
            for h, v in (headers or {}).items():
                signed[h.lower()] = v
            send = dict(signed)
            if s.ak or s.sk:
                send["Authorization"] = _sigv4.authorization(
                    method, path, params, signed, payload_hash, s.ak, s.sk, s.region, amz_date)
            send["User-Agent"] = USER_AGENT
            if body is not None or method in ("PUT", "POST"):
                send["Content-Length"] = str(length)
            conn, fresh = self._conn(s)
            data = _open_body(body)
            try:
                try:
                    conn.request(method, target, body=data, headers=send)
                    resp = conn.getresponse()
                    status = resp.status
                    if 200 <= status < 300 and sink is not None:
                        try:
                            sink.seek(0)
                            sink.truncate()
                        except OSError as e:
                            raise _LocalError(e) from e
                        got = _copy_body(resp, sink)
                        want = resp.getheader("Content-Length")
                        if want is not None and got != int(want):
                            raise MoxFileReadException(
                                "%s %s: the body ended after %d of %s bytes" % (
                                    method, _url(bucket, key), got, want), _url(bucket, key))
                        raw = b""
                    else:
                        raw = resp.read()
                finally:
                    if hasattr(data, "close"):
                        data.close()
            except _LocalError as e:
                self._drop(s)
                raise e.err from None
            except (http.client.HTTPException, OSError, MoxFileReadException) as e:
                # OSError covers ConnectionError, socket.timeout and ssl.SSLError.
                self._drop(s)
                if (not fresh and not stale_retried and attempt == 0 and isinstance(
                        e, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError))):
                    # A kept-alive connection that the server closed meanwhile.
                    stale_retried = True
                    continue
                if attempt >= s.retry:
                    raise MoxFileConnectionException(
                        "%s %s: cannot reach OBS at %s after %d attempt(s): %s" % (
                            method, _url(bucket, key), s.endpoint(), attempt + 1, _describe(e)),
                        _url(bucket, key)) from e
                attempt += 1
                time.sleep(s.retry_wait * attempt)
                continue
            if resp.will_close:
                self._drop(s)
            r = Response(method, bucket, key, status, resp.reason, resp.headers, raw)
            if status in _RETRY_STATUS and attempt < s.retry:
                attempt += 1
                time.sleep(s.retry_wait * attempt)
                continue
            if status >= 300:
                raise_for(r, op)
            return r

    # ---- operations -----------------------------------------------------

    def head_bucket(self, bucket):
        """True when the bucket exists (and the caller may list it)."""
        try:
            self.list_page(bucket, "", max_keys=1)
        except MoxFileNotExistsException:
            return False
        return True

    def head_object(self, bucket, key):
        """The Response of a HEAD (headers only), or None when there is no
        such object. Errors other than 404 raise, with the error code read by
        a GET because a HEAD answer has no body."""
        try:
            return self.request("HEAD", bucket, key, op="HEAD")
        except MoxFileNotExistsException:
            return None
        except MoxFileRespException as e:
            if e.resp is not None and e.resp.status in _RETRY_STATUS:
                raise
            self.request("GET", bucket, key, headers={"range": "bytes=0-0"}, op="HEAD")
            raise

    def get_object(self, bucket, key, start=None, end=None):
        """The object's bytes, or those of the inclusive range start-end."""
        headers = {}
        if start is not None:
            headers["range"] = "bytes=%d-%s" % (start, "" if end is None else end)
        return self.request("GET", bucket, key, headers=headers, op="GET")

    def download(self, bucket, key, f):
        """Write the object's bytes to the binary file f."""
        self.request("GET", bucket, key, sink=f, op="GET")

    def put_bytes(self, bucket, key, data):
        self.request("PUT", bucket, key, body=bytes(data), op="PUT")

    def put_file(self, bucket, key, path):
        """Upload a local file: one PUT up to the multipart threshold, a
        multipart upload above."""
        s = self.settings()
        size = os.path.getsize(path)
        if size <= s.multipart_threshold:
            self.request("PUT", bucket, key, body=FileSlice(path, 0, size), op="PUT")
            return
        part = max(s.part_size, -(-size // MAX_PARTS))
        upload_id = self.create_multipart(bucket, key)
        try:
            etags = []
            for n, off in enumerate(range(0, size, part), 1):
                etags.append(self.upload_part(bucket, key, upload_id, n,
                                              FileSlice(path, off, min(part, size - off))))
            self.complete_multipart(bucket, key, upload_id, etags)
        except BaseException:
            try:
                self.request("DELETE", bucket, key, params=[("uploadId", upload_id)], op="AbortMultipartUpload")
            except Exception:
                pass
            raise

    def create_multipart(self, bucket, key):
        r = self.request("POST", bucket, key, params=[("uploads", None)], op="CreateMultipartUpload")
        upload_id = _find(parse_xml(r.body), "UploadId")
        if not upload_id:
            raise MoxFileRespException("CreateMultipartUpload %s: the answer has no UploadId" % _url(bucket, key),
                                       _url(bucket, key), r)
        return upload_id

    def upload_part(self, bucket, key, upload_id, number, body):
        r = self.request("PUT", bucket, key, params=[("partNumber", str(number)), ("uploadId", upload_id)],
                         body=body, op="UploadPart")
        return r.headers.get("ETag", "")

    def complete_multipart(self, bucket, key, upload_id, etags):
        doc = "<CompleteMultipartUpload>" + "".join(
            "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (n, xml_escape(e))
            for n, e in enumerate(etags, 1)) + "</CompleteMultipartUpload>"
        r = self.request("POST", bucket, key, params=[("uploadId", upload_id)], body=doc.encode("utf-8"),
                         headers={"content-type": "application/xml"}, op="CompleteMultipartUpload")
        _raise_embedded_error(r, "CompleteMultipartUpload")

    def copy_object(self, src_bucket, src_key, bucket, key):
        source = _sigv4.uri_encode("/" + src_bucket + "/" + src_key, keep_slash=True)
        r = self.request("PUT", bucket, key, headers={"x-amz-copy-source": source}, op="CopyObject")
        _raise_embedded_error(r, "CopyObject")

    def delete_object(self, bucket, key):
        self.request("DELETE", bucket, key, op="DELETE")

    def delete_objects(self, bucket, keys):
        """Delete keys in batches of 1000 (DeleteObjects)."""
        keys = list(keys)
        for i in range(0, len(keys), 1000):
            batch = keys[i:i + 1000]
            doc = ("<Delete><Quiet>true</Quiet>" + "".join(
                "<Object><Key>%s</Key></Object>" % xml_escape(k) for k in batch) + "</Delete>").encode("utf-8")
            md5 = base64.b64encode(hashlib.md5(doc).digest()).decode("ascii")
            r = self.request("POST", bucket, None, params=[("delete", None)], body=doc,
                             headers={"content-md5": md5, "content-type": "application/xml"},
                             op="DeleteObjects")
            root = parse_xml(r.body)
            errors = []
            if root is not None:
                for el in root.iter():
                    if _local(el.tag) == "Error":
                        code = _find(el, "Code")
                        if code != "NoSuchKey":
                            errors.append("%s (%s: %s)" % (_find(el, "Key"), code, _find(el, "Message")))
            if errors:
                raise MoxFileRespException("DeleteObjects %s: %d key(s) not deleted: %s" % (
                    _url(bucket, ""), len(errors), "; ".join(errors[:5])), _url(bucket, ""), r)

    def list_page(self, bucket, prefix, delimiter=None, token=None, max_keys=None):
        """One ListObjectsV2 page: (objects, prefixes, next_token) where
        objects are ObjectInfo and prefixes the common prefixes."""
        s = self.settings()
        params = [("list-type", "2"), ("prefix", prefix), ("encoding-type", "url"),
                  ("max-keys", str(max_keys or s.list_max_keys))]
        if delimiter:
            params.append(("delimiter", delimiter))
        if token:
            params.append(("continuation-token", token))
        r = self.request("GET", bucket, None, params=params, op="ListObjectsV2")
        root = parse_xml(r.body)
        if root is None:
            raise MoxFileRespException("ListObjectsV2 %s: the answer is not XML" % _url(bucket, prefix),
                                       _url(bucket, prefix), r)
        objects, prefixes = [], []
        truncated, next_token = False, None
        for el in root:
            tag = _local(el.tag)
            if tag == "Contents":
                objects.append(ObjectInfo(
                    unquote_plus(_find(el, "Key")), int(_find(el, "Size") or 0),
                    _parse_iso_ns(_find(el, "LastModified")), _find(el, "ETag")))
            elif tag == "CommonPrefixes":
                prefixes.append(unquote_plus(_find(el, "Prefix")))
            elif tag == "IsTruncated":
                truncated = (el.text or "").strip().lower() == "true"
            elif tag == "NextContinuationToken":
                next_token = el.text
        return objects, prefixes, (next_token if truncated else None)

    def list(self, bucket, prefix, delimiter=None):
        """Every (objects, prefixes) page under prefix, following tokens."""
        token = None
        while True:
            objects, prefixes, token = self.list_page(bucket, prefix, delimiter, token)
            yield objects, prefixes
            if not token:
                return


class _ConnPool(dict):
    """One thread's connections; closed when the thread ends (its
    thread-local storage is released) or the pool is collected."""

    def __init__(self):
        dict.__init__(self)
        self.pid = os.getpid()

    def __del__(self):
        for c in self.values():
            try:
                c.close()
            except Exception:
                pass


class ObjectInfo:
    __slots__ = ("key", "size", "mtime_ns", "etag")

    def __init__(self, key, size, mtime_ns, etag):
        self.key, self.size, self.mtime_ns, self.etag = key, size, mtime_ns, etag


class FileSlice:
    """length bytes of the local file path from offset: a request body read
    from disk (hashed first, then streamed)."""

    __slots__ = ("path", "offset", "length")

    def __init__(self, path, offset, length):
        self.path, self.offset, self.length = path, offset, length


class _SliceReader:
    def __init__(self, sl):
        self._f = open(sl.path, "rb")
        self._f.seek(sl.offset)
        self._left = sl.length

    def read(self, n=-1):
        if self._left <= 0:
            return b""
        if n is None or n < 0 or n > self._left:
            n = self._left
        b = self._f.read(n)
        self._left -= len(b)
        if not b:
            self._left = 0
        return b

    def close(self):
        self._f.close()


def _payload(body):
    if body is None:
        return _sigv4.EMPTY_SHA256, 0
    if isinstance(body, FileSlice):
        h = hashlib.sha256()
        r = _SliceReader(body)
        try:
            n = 0
            while True:
                b = r.read(MiB)
                if not b:
                    break
                n += len(b)
                h.update(b)
        finally:
            r.close()
        if n != body.length:
            raise MoxFileReadException("%s changed while being uploaded (%d bytes instead of %d)" % (
                body.path, n, body.length), body.path)
        return h.hexdigest(), body.length
    return hashlib.sha256(body).hexdigest(), len(body)


def _open_body(body):
    if isinstance(body, FileSlice):
        return _SliceReader(body)
    return body


class _LocalError(Exception):
    """A local disk error while receiving a body: not retried."""

    def __init__(self, err):
        Exception.__init__(self, str(err))
        self.err = err


def _copy_body(resp, f):
    n = 0
    while True:
        b = resp.read(MiB)
        if not b:
            return n
        try:
            f.write(b)
        except OSError as e:
            raise _LocalError(e) from e
        n += len(b)


def _describe(e):
    s = str(e)
    return type(e).__name__ + (": " + s if s else "")


def _url(bucket, key):
    return "obs://%s/%s" % (bucket, key or "")


class Response:
    """An S3 answer: status, reason, headers, body and, for errors, the
    code, message, hint and request id read from the XML body."""

    def __init__(self, method, bucket, key, status, reason, headers, body):
        self.method, self.bucket, self.key = method, bucket, key
        self.status, self.reason, self.headers, self.body = status, reason, headers, body
        self.code = self.message = self.hint = ""
        self.request_id = headers.get("x-amz-request-id", "") if headers is not None else ""
        if status >= 300 and body:
            root = parse_xml(body)
            if root is not None and _local(root.tag) == "Error":
                self.code = _find(root, "Code")
                self.message = _find(root, "Message")
                self.hint = _find(root, "Hint")
                self.request_id = _find(root, "RequestId") or self.request_id

    def __repr__(self):
        return "<Response %s %s %d %s>" % (self.method, _url(self.bucket, self.key), self.status,
                                           self.code or self.reason)


def raise_for(r, op=None):
    """Raise the exception for an error Response: MoxFileNotExistsException
    for 404 and NoSuch* codes, MoxFileRespException otherwise. The message
    names the operation, the URL, the status, the S3 code and message."""
    url = _url(r.bucket, r.key)
    code = r.code or ("NotFound" if r.status == 404 else http.client.responses.get(r.status, "HTTP%d" % r.status))
    msg = "%s %s: %d %s" % (op or r.method, url, r.status, code)
    if r.message:
        msg += ": " + r.message
    if r.hint:
        msg += " (hint: %s)" % r.hint
    if r.request_id:
        msg += " [request id %s]" % r.request_id
    if r.status == 404 or r.code in _NOT_FOUND_CODES:
        raise MoxFileNotExistsException(msg, url, r)
    raise MoxFileRespException(msg, url, r)


def _raise_embedded_error(r, op):
    """S3 may answer 200 with an <Error> body (CopyObject, Complete…)."""
    root = parse_xml(r.body)
    if root is not None and _local(root.tag) == "Error":
        e = Response(r.method, r.bucket, r.key, 500, "embedded error", r.headers, r.body)
        raise_for(e, op)


def parse_xml(body):
    if not body:
        return None
    try:
        return ET.fromstring(body)
    except ET.ParseError:
        return None


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def _find(el, name):
    if el is None:
        return ""
    for child in el:
        if _local(child.tag) == name:
            return child.text or ""
    return ""


def _parse_iso_ns(s):
    if not s:
        return 0
    try:
        s = s.strip().replace("Z", "+00:00")
        frac = 0
        if "." in s:
            head, rest = s.split(".", 1)
            digits = ""
            for ch in rest:
                if ch.isdigit():
                    digits += ch
                else:
                    break
            tail = rest[len(digits):]
            frac = int((digits + "000000000")[:9]) if digits else 0
            s = head + tail
        dt = datetime.datetime.fromisoformat(s)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=datetime.timezone.utc)
        return int(dt.timestamp()) * 1000000000 + frac
    except ValueError:
        return 0


def http_date_ns(s):
    """Nanoseconds since the epoch of an HTTP date (Last-Modified), 0 when
    absent or malformed."""
    if not s:
        return 0
    try:
        return int(email.utils.parsedate_to_datetime(s).timestamp()) * 1000000000
    except (TypeError, ValueError):
        return 0
