"""An in-memory S3 server for the tests: path-style, SigV4-checked, with
ListObjectsV2, ranged GET, HEAD, PUT, DELETE, DeleteObjects, CopyObject
and multipart uploads, plus injected faults (dropped connections, 503s).

It implements just enough of S3 to exercise moxing's client; the real
server is covered by test/e2e/python_sdk_test.go."""

import email.utils
import hashlib
import hmac
import os
import sys
import threading
import time
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, unquote
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from moxing import _sigv4  # noqa: E402


class Obj:
    def __init__(self, data, etag=None):
        self.data = data
        self.etag = etag or '"%s"' % hashlib.md5(data).hexdigest()
        self.mtime = time.time()


class FakeOBS:
    """The server's state; start() serves it on 127.0.0.1."""

    def __init__(self, keys, region="us-east-1", tokens=None):
        self.keys = dict(keys)          # access key -> secret key
        self.tokens = dict(tokens or {})  # access key -> required session token
        self.region = region
        self.buckets = {}
        self.uploads = {}
        self.faults = []  # consumed one per request: "drop" or an HTTP status (int)
        self.log = []     # (method, raw path) of every request
        self.lock = threading.RLock()
        self._srv = None

    def start(self):
        fake = self

        class H(Handler):
            pass
        H.fake = fake
        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self._srv.daemon_threads = True
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()
        return "http://127.0.0.1:%d" % self._srv.server_address[1]

    def stop(self):
        if self._srv:
            self._srv.shutdown()
            self._srv.server_close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    fake = None

    def log_message(self, *a):
        pass

    # ---- plumbing -------------------------------------------------------

    def do_GET(self):
        self.serve()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def send(self, status, body=b"", headers=None):
        headers = dict(headers or {})
        length = headers.pop("Content-Length", str(len(body)))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("x-amz-request-id", "fake-req")
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message, key=""):
        body = ("<Error><Code>%s</Code><Message>%s</Message><Key>%s</Key><RequestId>fake-req</RequestId>"
                "<Hint>fake hint</Hint></Error>" % (code, escape(message), escape(key))).encode()
        self.send(status, body, {"Content-Type": "application/xml"})

    def serve(self):
        f = self.fake
        raw_path, _, raw_query = self.path.partition("?")
        with f.lock:
            f.log.append((self.command, self.path))
            fault = f.faults.pop(0) if f.faults else None
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(fault, int):
            self.error(fault, "SlowDown", "injected fault")
            return
        path = unquote(raw_path)
        params = parse_qsl(raw_query, keep_blank_values=True)
        if not self.authenticate(path, params, body):
            return
        with f.lock:
            self.dispatch(path, dict(params), body)

    def dispatch(self, path, q, body):
        f = self.fake
        bucket, _, key = path[1:].partition("/")
        if bucket not in f.buckets:
            return self.error(404, "NoSuchBucket", "The specified bucket does not exist", key)
        objs = f.buckets[bucket]
        if not key:
            if self.command == "GET" and q.get("list-type") == "2":
                return self.list_v2(objs, q)
            if self.command == "POST" and "delete" in q:
                return self.delete_objects(objs, body)
            return self.error(501, "NotImplemented", "bucket operation")
        if "uploads" in q and self.command == "POST":
            uid = hashlib.md5(("%s%s" % (key, time.time())).encode()).hexdigest()
            f.uploads[uid] = {}
            return self.send(200, ("<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key>"
                                   "<UploadId>%s</UploadId></InitiateMultipartUploadResult>" % (
                                       bucket, escape(key), uid)).encode())
        if "uploadId" in q:
            return self.multipart(objs, key, q, body)
        if self.command in ("GET", "HEAD"):
            o = objs.get(key)
            if o is None:
                return self.error(404, "NoSuchKey", "The specified key does not exist.", key)
            hdr = {"ETag": o.etag, "Last-Modified": email.utils.formatdate(o.mtime, usegmt=True)}
            data = o.data
            rng = self.headers.get("Range")
            if rng:
                a, _, b = rng[len("bytes="):].partition("-")
                a = int(a)
                b = int(b) if b else len(data) - 1
                if a >= len(data):
                    return self.error(416, "InvalidRange", "The requested range is not satisfiable", key)
                data = data[a:b + 1]
                hdr["Content-Range"] = "bytes %d-%d/%d" % (a, a + len(data) - 1, len(o.data))
                return self.send(206, data, hdr)
            if self.command == "HEAD":
                hdr["Content-Length"] = str(len(data))
            return self.send(200, data, hdr)
        if self.command == "PUT":
            src = self.headers.get("x-amz-copy-source")
            if src:
                sb, _, sk = unquote(src).lstrip("/").partition("/")
                so = f.buckets.get(sb, {}).get(sk)
                if so is None:
                    return self.error(404, "NoSuchKey", "The specified key does not exist.", sk)
                objs[key] = Obj(so.data)
                return self.send(200, ("<CopyObjectResult><ETag>%s</ETag></CopyObjectResult>" % escape(
                    objs[key].etag)).encode())
            objs[key] = Obj(body)
            return self.send(200, b"", {"ETag": objs[key].etag})
        if self.command == "DELETE":
            objs.pop(key, None)
            return self.send(204)
        return self.error(405, "MethodNotAllowed", "method")

    # ---- auth -----------------------------------------------------------

    def authenticate(self, path, params, body):
        f = self.fake
        auth = self.headers.get("Authorization", "")
        if not auth.startswith(_sigv4.ALGORITHM + " "):
            self.error(403, "AccessDenied", "Anonymous access is forbidden")
            return False
        fields = dict(p.strip().split("=", 1) for p in auth[len(_sigv4.ALGORITHM) + 1:].split(","))
        ak, date, region, service, _ = fields["Credential"].split("/")
        if ak not in f.keys:
            self.error(403, "InvalidAccessKeyId", "The AWS access key Id you provided does not exist in our records.")
            return False
        if ak in f.tokens and self.headers.get("x-amz-security-token") != f.tokens[ak]:
            self.error(403, "InvalidToken", "The provided token is malformed or otherwise invalid.")
            return False
        payload = self.headers.get("x-amz-content-sha256", "")
        if payload != _sigv4.UNSIGNED_PAYLOAD and payload != hashlib.sha256(body).hexdigest():
            self.error(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
            return False
        signed = fields["SignedHeaders"].split(";")
        headers = {h: self.headers.get(h, "") for h in signed}
        want = _sigv4.authorization(self.command, path, params, headers, payload, ak, f.keys[ak],
                                    region, self.headers.get("x-amz-date", ""))
        if not hmac.compare_digest(want.rsplit("Signature=", 1)[1], fields["Signature"]):
            self.error(403, "SignatureDoesNotMatch",
                       "The request signature we calculated does not match the signature you provided.")
            return False
        return True

    # ---- operations -----------------------------------------------------

    def list_v2(self, objs, q):
        prefix = q.get("prefix", "")
        delim = q.get("delimiter", "")
        max_keys = int(q.get("max-keys", "1000"))
        start = q.get("continuation-token", "")
        enc = (lambda s: quote(s, safe="/-_.~")) if q.get("encoding-type") == "url" else (lambda s: s)
        entries = []  # (name, is_common_prefix), sorted and unique
        for k in sorted(objs):
            if not k.startswith(prefix):
                continue
            e = (k, False)
            if delim:
                i = k.find(delim, len(prefix))
                if i >= 0:
                    e = (k[:i + 1], True)
            if not entries or entries[-1] != e:
                entries.append(e)
        if start:
            entries = [e for e in entries if e[0] > start]
        page, truncated = entries[:max_keys], len(entries) > max_keys
        contents = [e for e, p in page if not p]
        prefixes = [e for e, p in page if p]
        count, last = len(page), page[-1][0] if page else ""
        out = ['<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               "<Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>" % (
                   escape(enc(prefix)), count, max_keys),
               "<IsTruncated>%s</IsTruncated>" % ("true" if truncated else "false")]
        if truncated:
            out.append("<NextContinuationToken>%s</NextContinuationToken>" % escape(last))
        for k in contents:
            o = objs[k]
            out.append("<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag>"
                       "<Size>%d</Size></Contents>" % (
                           escape(enc(k)), time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(o.mtime)),
                           escape(o.etag), len(o.data)))
        for p in prefixes:
            out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % escape(enc(p)))
        out.append("</ListBucketResult>")
        self.send(200, "".join(out).encode(), {"Content-Type": "application/xml"})

    def delete_objects(self, objs, body):
        root = ET.fromstring(body)
        for el in root.iter():
            if el.tag == "Key":
                objs.pop(el.text or "", None)
        self.send(200, b"<DeleteResult></DeleteResult>")

    def multipart(self, objs, key, q, body):
        up = self.fake.uploads.get(q["uploadId"])
        if up is None:
            return self.error(404, "NoSuchUpload", "The specified upload does not exist.", key)
        if self.command == "PUT":
            o = Obj(body)
            up[int(q["partNumber"])] = o
            return self.send(200, b"", {"ETag": o.etag})
        if self.command == "DELETE":
            del self.fake.uploads[q["uploadId"]]
            return self.send(204)
        root = ET.fromstring(body)
        nums = [int(el.text) for el in root.iter() if el.tag == "PartNumber"]
        etags = [el.text for el in root.iter() if el.tag == "ETag"]
        for i, (n, e) in enumerate(zip(nums, etags)):
            if n not in up or up[n].etag != e:
                return self.error(400, "InvalidPart", "part %d" % n, key)
            if i < len(nums) - 1 and len(up[n].data) < 5 << 20:
                return self.error(400, "EntityTooSmall", "part %d" % n, key)
        data = b"".join(up[n].data for n in nums)
        md5s = b"".join(bytes.fromhex(up[n].etag.strip('"')) for n in nums)
        objs[key] = Obj(data, '"%s-%d"' % (hashlib.md5(md5s).hexdigest(), len(nums)))
        del self.fake.uploads[q["uploadId"]]
        self.send(200, ("<CompleteMultipartUploadResult><Key>%s</Key><ETag>%s</ETag>"
                        "</CompleteMultipartUploadResult>" % (escape(key), escape(objs[key].etag))).encode())
