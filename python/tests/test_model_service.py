"""model_service: base classes, request decoding, response encoding, model
loading and the HTTP protocol (driven without sockets). The server end to
end is in test_model_service_server.py."""

import asyncio
import datetime
import decimal
import io
import json
import os
import random
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from model_service import _body, _http, _loader, errors  # noqa: E402
from model_service.model_service import BaseService, ModelService, SingleNodeService  # noqa: E402
from model_service.pytorch_model_service import PTServingBaseService  # noqa: E402
from model_service.tfserving_model_service import TfServingBaseService  # noqa: E402
from model_service import log_util, log as ms_log  # noqa: E402
from need import need_if  # noqa: E402

try:
    import numpy
except ImportError:  # pragma: no cover - numpy is optional
    numpy = None


class BaseClassTests(unittest.TestCase):
    def test_init_and_identity_pipeline(self):
        for cls in (BaseService, SingleNodeService, PTServingBaseService, TfServingBaseService):
            s = cls("m", "/models/m")
            self.assertEqual((s.model_name, s.model_path), ("m", "/models/m"))
            self.assertEqual(s._preprocess({"a": 1}), {"a": 1})
            self.assertEqual(s._postprocess([1]), [1])
            self.assertIsNone(s.ping())
            self.assertIsNone(s.signature())
        self.assertIs(ModelService, BaseService)
        self.assertEqual(SingleNodeService("m", "p").inference({"x": [1, 2]}), {"x": [1, 2]})
        self.assertTrue(issubclass(PTServingBaseService, SingleNodeService))
        self.assertTrue(issubclass(TfServingBaseService, SingleNodeService))

    def test_pipeline_order_and_timings(self):
        calls = []

        class S(SingleNodeService):
            def _preprocess(self, data):
                calls.append(("pre", data))
                return data + 1

            def _inference(self, data):
                calls.append(("inf", data))
                return data * 10

            def _postprocess(self, data):
                calls.append(("post", data))
                return {"r": data}

        s = S("m", "p")
        self.assertEqual(s.inference(1), {"r": 20})
        self.assertEqual(calls, [("pre", 1), ("inf", 2), ("post", 20)])
        self.assertEqual(set(s.last_timings), {"preprocess", "inference", "postprocess"})

    def test_pytorch_default_inference(self):
        s = PTServingBaseService("m", "p")
        with self.assertRaises(RuntimeError) as cm:
            s.inference({"a": 1})
        self.assertIn("self.model is not set", str(cm.exception))
        s.model = lambda v: v * 2
        self.assertEqual(s.inference({"a": 1, "b": 3}), {"a": 2, "b": 6})  # per key, as ModelArts
        self.assertEqual(s.inference(4), 8)

        class NoSuper(PTServingBaseService):
            def __init__(self, model_name, model_path):  # does not call super().__init__
                self.model_name = model_name

        with self.assertRaises(RuntimeError):
            NoSuper("m", "p").inference({"a": 1})

    def test_tensorflow_default_inference(self):
        with self.assertRaises(NotImplementedError) as cm:
            TfServingBaseService("m", "/d").inference({"a": 1})
        self.assertIn("TensorFlow serving is not available: override _inference", str(cm.exception))

    def test_loggers(self):
        lg = log_util.get_logger("ms-test-logger")
        self.assertEqual(lg.level, 20)
        self.assertFalse(lg.propagate)
        n = len(lg.handlers)
        log_util.get_logger("ms-test-logger")
        self.assertEqual(len(lg.handlers), n)  # the handler is added once
        self.assertIs(ms_log.getLogger("ms-test-logger"), lg)


class ParamsTests(unittest.TestCase):
    def test_parse_header_params(self):
        cases = [
            ("form-data", ("form-data", {})),
            ('form-data; name="images"; filename="cat.jpg"',
             ("form-data", {"name": "images", "filename": "cat.jpg"})),
            ('Form-Data;NAME=a ; filename="a;b \\"q\\".png"',
             ("form-data", {"name": "a", "filename": 'a;b "q".png'})),
            ("form-data; name=f; filename=\"x\"; filename*=UTF-8''%C3%A9t%C3%A9.jpg",
             ("form-data", {"name": "f", "filename": "été.jpg"})),
            ("multipart/form-data; boundary=----abc", ("multipart/form-data", {"boundary": "----abc"})),
            ("text/plain; charset=latin-1; flag; =x", ("text/plain", {"charset": "latin-1"})),
            ("a; b*=bogus''%41", ("a", {"b": "A"})),
        ]
        for value, want in cases:
            with self.subTest(value=value):
                self.assertEqual(_body.parse_header_params(value), want)


def multipart(parts, boundary="XyZ-boundary"):
    """parts: (name, filename or None, content bytes, content type or None)."""
    out = []
    for name, filename, content, ctype in parts:
        out.append(b"--" + boundary.encode() + b"\r\n")
        disp = 'Content-Disposition: form-data; name="%s"' % name
        if filename is not None:
            disp += '; filename="%s"' % filename
        out.append(disp.encode("utf-8") + b"\r\n")
        if ctype:
            out.append(b"Content-Type: " + ctype.encode() + b"\r\n")
        out.append(b"\r\n" + content + b"\r\n")
    out.append(b"--" + boundary.encode() + b"--\r\n")
    return b"".join(out), "multipart/form-data; boundary=" + boundary


class DecodeTests(unittest.TestCase):
    def test_json(self):
        self.assertEqual(_body.decode(b'{"a": [1, 2]}', "application/json"), {"a": [1, 2]})
        self.assertEqual(_body.decode(b'[1]', "application/json; charset=utf-8"), [1])
        self.assertEqual(_body.decode('{"é": 1}'.encode("utf-16"), "application/json"), {"é": 1})
        self.assertEqual(_body.decode('{"é": 1}'.encode("latin-1"), "application/json; charset=latin-1"),
                         {"é": 1})
        self.assertEqual(_body.decode(b'{"x": 1}', ""), {"x": 1})  # no Content-Type: JSON
        self.assertEqual(_body.decode(b'{"x": 1}', "application/vnd.kserve+json"), {"x": 1})
        self.assertEqual(_body.decode(b"", "application/json"), {})
        for body, ctype in ((b"{bad", "application/json"), (b"\xff\xfe\xfd", "application/json"),
                            (b"abc", ""), (b"[" * 100000, "application/json"),
                            (b"{}", "application/json; charset=no-such-charset")):
            with self.subTest(body=body[:10]):
                with self.assertRaises(errors.HTTPError) as cm:
                    _body.decode(body, ctype)
                self.assertEqual((cm.exception.status, cm.exception.code), (400, errors.BAD_JSON))

    def test_form_and_other_types(self):
        self.assertEqual(_body.decode(b'{"images": "aGk="}', "application/x-www-form-urlencoded"),
                         {"images": "aGk="})  # curl -d '{...}'
        self.assertEqual(_body.decode(b"a=1&b=x%20y&a=2&c=", "application/x-www-form-urlencoded"),
                         {"a": ["1", "2"], "b": "x y", "c": ""})
        self.assertEqual(_body.decode(b"{not json", "application/x-www-form-urlencoded"),
                         {"{not json": ""})
        self.assertEqual(_body.decode(b"\x00\x01raw", "application/octet-stream"), {"data": b"\x00\x01raw"})
        self.assertEqual(_body.decode(b"hello", "text/plain"), {"data": b"hello"})

    def test_multipart(self):
        body, ctype = multipart([
            ("images", "cat.jpg", b"\xff\xd8JPEG\r\n--not-the-boundary", "image/jpeg"),
            ("images", "dog.png", b"PNG", None),
            ("note", None, "héllo".encode(), None),
            ("tag", None, b"a", "text/plain; charset=latin-1"),
            ("tag", None, b"\xe9", "text/plain; charset=latin-1"),
            ("tag", None, b"c", None),
            ("empty", "", b"", None),
        ])
        data = _body.decode(body, ctype)
        self.assertEqual(set(data), {"images", "note", "tag", "empty"})
        cat = data["images"]["cat.jpg"]
        self.assertIsInstance(cat, io.BytesIO)
        self.assertEqual(cat.read(), b"\xff\xd8JPEG\r\n--not-the-boundary")
        self.assertEqual((cat.filename, cat.name, cat.content_type, cat.mimetype),
                         ("cat.jpg", "cat.jpg", "image/jpeg", "image/jpeg"))
        self.assertEqual(data["images"]["dog.png"].getvalue(), b"PNG")
        self.assertEqual(data["images"]["dog.png"].content_type, "application/octet-stream")
        self.assertEqual(data["note"], "héllo")
        self.assertEqual(data["tag"], ["a", "é", "c"])
        self.assertEqual(data["empty"][""].getvalue(), b"")
        out = io.BytesIO()
        cat.save(out)
        self.assertEqual(out.getvalue(), cat.getvalue())
        self.assertIn("cat.jpg", repr(cat))

    def test_multipart_variants(self):
        # preamble, transport padding, LF after the delimiter, quoted boundary, epilogue
        body = (b"preamble\r\n--b1  \r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bin\""
                b"\r\n\r\n\x00\x01\r\n--b1\nContent-Disposition: form-data; name=t\r\n\r\nv\r\n--b1--epilogue")
        data = _body.decode(body, 'multipart/form-data; boundary="b1"')
        self.assertEqual(data["f"]["a.bin"].getvalue(), b"\x00\x01")
        self.assertEqual(data["t"], "v")
        # a part with no headers has no name: malformed
        for body, ctype in [
            (b"--b\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b"),
            (b"x", "multipart/form-data"),
            (b"nothing here", "multipart/form-data; boundary=b"),
            (b"--b\r\nContent-Disposition: form-data; name=a\r\n\r\nunterminated", "multipart/form-data; boundary=b"),
            (b"--b\r\nContent-Disposition: form-data; name=a", "multipart/form-data; boundary=b"),
            (b"--bXX", "multipart/form-data; boundary=b"),
            (b"--b\r\nNoColon\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b"),
            (b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b"),
            (b"--b\r\nContent-Disposition: form-data; filename=x\r\n\r\nx\r\n--b--", "multipart/form-data; boundary=b"),
            (b"--b\r\nContent-Disposition: form-data; name=a; filename=x\r\n\r\nx\r\n--b\r\n"
             b"Content-Disposition: form-data; name=a\r\n\r\ny\r\n--b--", "multipart/form-data; boundary=b"),
        ]:
            with self.subTest(body=body):
                with self.assertRaises(errors.HTTPError) as cm:
                    _body.decode(body, ctype)
                self.assertEqual((cm.exception.status, cm.exception.code), (400, errors.BAD_MULTIPART))

    def test_multipart_fuzz(self):
        rnd = random.Random(5)
        seed, ctype = multipart([("images", "a.png", bytes(range(256)), "image/png"), ("x", None, b"y", None)])
        for _ in range(3000):
            b = bytearray(seed)
            for _ in range(rnd.randint(1, 6)):
                op = rnd.randint(0, 2)
                i = rnd.randrange(len(b) + 1)
                if op == 0 and b:
                    b[min(i, len(b) - 1)] = rnd.randrange(256)
                elif op == 1:
                    del b[i:i + rnd.randint(1, 20)]
                else:
                    b[i:i] = rnd.choice([b"\r\n", b"--", b"XyZ-boundary", b"\"", b";", b"name=", b"\r\n\r\n"])
            try:
                data = _body.decode(bytes(b), ctype)
            except errors.HTTPError as e:
                self.assertEqual(e.code, errors.BAD_MULTIPART)
                continue
            self.assertIsInstance(data, dict)


class EncodeTests(unittest.TestCase):
    def test_encode(self):
        self.assertEqual(_body.encode({"a": [1, 2.5, None, True], "é": "ü"}),
                         '{"a":[1,2.5,null,true],"é":"ü"}'.encode())
        self.assertEqual(json.loads(_body.encode({"d": decimal.Decimal("1.5"), "s": {3},
                                                  "t": datetime.date(2024, 5, 1)})),
                         {"d": 1.5, "s": [3], "t": "2024-05-01"})
        self.assertEqual(_body.encode("x\udcff"), b'"x\\udcff"')  # lone surrogate: still valid UTF-8
        with self.assertRaises(TypeError) as cm:
            _body.encode({"b": b"raw"})
        self.assertIn("base64", str(cm.exception))
        with self.assertRaises(TypeError):
            _body.encode(object())

    @need_if(numpy is None, "numpy is not installed")
    def test_encode_numpy(self):
        r = {"i": numpy.int64(7), "f": numpy.float32(0.5), "a": numpy.arange(3), "m": numpy.eye(2)}
        self.assertEqual(json.loads(_body.encode(r)), {"i": 7, "f": 0.5, "a": [0, 1, 2],
                                                       "m": [[1.0, 0.0], [0.0, 1.0]]})


class LoaderTests(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ms-loader-")
        self.addCleanup(shutil.rmtree, self.d, True)

    def write(self, name, text):
        with open(os.path.join(self.d, name), "w") as f:
            f.write(text)

    def test_read_config(self):
        self.assertEqual(_loader.read_config(self.d), {})
        self.write("config.json", '{"model_type": "PyTorch", "warmup": {"json": {"a": 1}}}')
        self.assertEqual(_loader.read_config(self.d)["model_type"], "PyTorch")
        bad = [
            ("{", "load", "not valid JSON"),
            ("[]", "load", "JSON object"),
            ('{"model_type": 3}', "load", "model_type"),
            ('{"warmup": 1}', "warmup", "warmup must be an object"),
            ('{"warmup": {}}', "warmup", "exactly one"),
            ('{"warmup": {"json": 1, "file": "x"}}', "warmup", "exactly one"),
            ('{"warmup": {"json": 1, "field": "images"}}', "warmup", '"field" goes with "file"'),
            ('{"warmup": {"file": ""}}', "warmup", "path in the model directory"),
            ('{"warmup": {"file": "a", "field": 3}}', "warmup", "non-empty string"),
            ('{"warmup": {"file": "a", "other": 1}}', "warmup", "unknown key"),
        ]
        for text, stage, msg in bad:
            with self.subTest(text=text):
                self.write("config.json", text)
                with self.assertRaises(_loader.LoadError) as cm:
                    _loader.read_config(self.d)
                self.assertEqual(cm.exception.stage, stage)
                self.assertIn(msg, str(cm.exception))

    def test_model_path(self):
        class PT(PTServingBaseService):
            pass

        class Generic(SingleNodeService):
            pass

        self.assertEqual(_loader.model_path_for(self.d, PT, {}), self.d)  # no weights: the dir
        for name in ("b.pth", "a.pt", "c.txt", "0.pth.bak"):
            self.write(name, "")
        os.mkdir(os.path.join(self.d, "00.pth"))  # a directory is not a weights file
        self.assertEqual(_loader.model_path_for(self.d, PT, {}), os.path.join(self.d, "a.pt"))
        self.assertEqual(_loader.model_path_for(self.d, Generic, {}), self.d)
        self.assertEqual(_loader.model_path_for(self.d, Generic, {"model_type": "PyTorch"}),
                         os.path.join(self.d, "a.pt"))
        self.assertEqual(_loader.model_path_for(self.d, Generic, {"model_type": "TensorFlow"}), self.d)

    def test_instantiate(self):
        class Two(SingleNodeService):
            pass

        class One(SingleNodeService):
            def __init__(self, model_path):  # ModelArts' machine-learning handlers
                self.seen = model_path

        class Bare(SingleNodeService):
            def __init__(self, model_name, model_path):  # sets nothing
                pass

        t = _loader.instantiate(Two, "n", "/p")
        self.assertEqual((t.model_name, t.model_path), ("n", "/p"))
        o = _loader.instantiate(One, "n", "/p")
        self.assertEqual((o.seen, o.model_name, o.model_path), ("/p", "n", "/p"))
        b = _loader.instantiate(Bare, "n", "/p")
        self.assertEqual((b.model_name, b.model_path), ("n", "/p"))

    def test_warmup_data(self):
        self.assertEqual(_loader.warmup_data(self.d, {"json": {"a": [1]}}), {"a": [1]})
        os.mkdir(os.path.join(self.d, "samples"))
        with open(os.path.join(self.d, "samples", "x.png"), "wb") as f:
            f.write(b"\x89PNG")
        data = _loader.warmup_data(self.d, {"file": "samples/x.png", "field": "img"})
        self.assertEqual(list(data), ["img"])
        f = data["img"]["x.png"]
        self.assertEqual((f.read(), f.content_type), (b"\x89PNG", "image/png"))
        self.assertEqual(list(_loader.warmup_data(self.d, {"file": "samples/x.png"})), ["images"])
        for rel in ("../x", "/etc/passwd", "missing.png"):
            with self.subTest(rel=rel):
                with self.assertRaises(_loader.LoadError) as cm:
                    _loader.warmup_data(self.d, {"file": rel})
                self.assertEqual(cm.exception.stage, "warmup")


# ---- the HTTP protocol without sockets


class FakeTransport(object):
    def __init__(self):
        self.out = bytearray()
        self.closed = False
        self.eof = False
        self.paused = False

    def write(self, b):
        assert not self.closed and not self.eof, "write after close"
        self.out += b

    def close(self):
        self.closed = True

    def abort(self):
        self.closed = True

    def can_write_eof(self):
        return True

    def write_eof(self):
        self.eof = True

    def pause_reading(self):
        self.paused = True

    def resume_reading(self):
        self.paused = False

    def get_extra_info(self, name, default=None):
        return default


def parse_responses(data):
    """[(status, headers dict, body)] of the complete responses in data."""
    out = []
    data = bytes(data)
    while data:
        i = data.find(b"\r\n\r\n")
        if i < 0:
            break
        lines = data[:i].split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode()
        n = int(headers.get("content-length", "0")) if status >= 200 else 0
        out.append((status, headers, data[i + 4:i + 4 + n]))
        data = data[i + 4 + n:]
    return out


class ProtocolTests(unittest.TestCase):
    def setUp(self):
        self.loop = asyncio.new_event_loop()
        self.addCleanup(self.loop.close)
        self.dispatched = []
        self.srv = _http.HTTPServer(self.loop, self.dispatched.append, max_header=1024, max_body=100,
                                    access_log=False)

    def connect(self):
        c = self.srv.protocol()
        t = FakeTransport()
        c.connection_made(t)
        return c, t

    def answer_all(self, body=b'{"ok":true}'):
        while self.dispatched:
            req = self.dispatched.pop(0)
            req.conn.finish(req, 200, body)

    def test_get_health_keepalive_pipelined(self):
        c, t = self.connect()
        c.data_received(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /health/ready?x=1 HTTP/1.1\r\n\r\n"
                        b"HEAD /health/live HTTP/1.1\r\n\r\n")
        rs = parse_responses(t.out)
        self.assertEqual([r[0] for r in rs[:2]], [200, 200])
        self.assertEqual(rs[0][2], b'{"status":"alive"}')
        self.assertEqual(rs[1][2], b'{"status":"ready"}')
        self.assertTrue(t.out.endswith(b"\r\n\r\n"))  # HEAD: no body
        self.assertFalse(t.closed or t.eof)

    def test_post_content_length_split_and_pipelined(self):
        c, t = self.connect()
        raw = (b"POST /a HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
               b"X-Request-Id: gw-1\r\n\r\n{\"a\":1}POST /b?q HTTP/1.1\r\nContent-Length: 2\r\n\r\n[]")
        for i in range(0, len(raw), 5):
            c.data_received(raw[i:i + 5])
        self.assertEqual(len(self.dispatched), 1)  # one at a time per connection
        req = self.dispatched[0]
        self.assertEqual((req.method, req.path, req.body, req.rid), (b"POST", b"/a", b'{"a":1}', "gw-1"))
        self.assertEqual(req.header("content-type"), "application/json")
        self.dispatched.pop().conn.finish(req, 200, b'{"ok":true}')
        self.assertEqual(len(self.dispatched), 1)  # the next one, parsed once the first is answered
        req = self.dispatched[0]
        self.assertEqual((req.path, req.target, req.body), (b"/b", b"/b?q", b"[]"))
        self.answer_all(b"{}")
        rs = parse_responses(t.out)
        self.assertEqual([(r[0], r[2]) for r in rs], [(200, b'{"ok":true}'), (200, b"{}")])
        self.assertEqual(rs[0][1]["x-request-id"], "gw-1")
        self.assertNotEqual(rs[1][1]["x-request-id"], "gw-1")
        self.assertEqual(self.srv.inflight, 0)

    def test_chunked(self):
        c, t = self.connect()
        raw = (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"3;ext=1\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nTrailer: x\r\n\r\n")
        for i in range(len(raw)):
            c.data_received(raw[i:i + 1])
        self.assertEqual(self.dispatched[0].body, b'{"a":1}')

    def test_expect_continue(self):
        c, t = self.connect()
        c.data_received(b"POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        self.assertEqual(bytes(t.out), b"HTTP/1.1 100 Continue\r\n\r\n")
        c.data_received(b"{}")
        self.assertEqual(self.dispatched[0].body, b"{}")
        c2, t2 = self.connect()
        c2.data_received(b"POST / HTTP/1.1\r\nContent-Length: 500\r\nExpect: 100-continue\r\n\r\n")
        rs = parse_responses(t2.out)
        self.assertEqual(rs[0][0], 413)  # refused before the body is sent

    def test_connection_close_and_http10(self):
        c, t = self.connect()
        c.data_received(b"GET /health/live HTTP/1.0\r\n\r\n")
        self.assertEqual(parse_responses(t.out)[0][1]["connection"], "close")
        self.assertTrue(t.eof)
        c, t = self.connect()
        c.data_received(b"GET /health/live HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        self.assertEqual(parse_responses(t.out)[0][1]["connection"], "keep-alive")
        self.assertFalse(t.eof)
        c, t = self.connect()
        c.data_received(b"POST / HTTP/1.1\r\nConnection: foo, close\r\nContent-Length: 0\r\n\r\n")
        self.answer_all()
        self.assertEqual(parse_responses(t.out)[0][1]["connection"], "close")
        self.assertTrue(t.eof)

    def test_errors(self):
        cases = [
            (b"GET /nope HTTP/1.1\r\n\r\n", 404, errors.NOT_FOUND, False),
            (b"PUT / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, errors.METHOD_NOT_ALLOWED, False),
            (b"GARBAGE\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"GET / HTTP/2.0\r\n\r\n", 505, errors.BAD_VERSION, True),
            (b"GET / FOO/1.1\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"GET x HTTP/1.1\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nBad Header: x\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nNoColon\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\n folded: x\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nContent-Length: x1\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
             errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, errors.BAD_TRANSFER_ENCODING, True),
            (b"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413, errors.BODY_TOO_LARGE, True),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", 413, errors.BODY_TOO_LARGE, True),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, errors.BAD_REQUEST, True),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc", 400, errors.BAD_REQUEST, True),
            (b"GET / HTTP/1.1\r\nX: " + b"a" * 2000 + b"\r\n\r\n", 431, errors.HEADERS_TOO_LARGE, True),
            (b"GET / HTTP/1.1\r\nX: " + b"a" * 2000, 431, errors.HEADERS_TOO_LARGE, True),
        ]
        for raw, status, code, closes in cases:
            with self.subTest(raw=raw[:50]):
                c, t = self.connect()
                c.data_received(raw)
                rs = parse_responses(t.out)
                self.assertEqual(len(rs), 1, bytes(t.out))
                self.assertEqual(rs[0][0], status)
                self.assertEqual(json.loads(rs[0][2])["error_code"], code)
                self.assertEqual(t.eof or t.closed, closes)
                self.assertEqual(self.dispatched, [])
                c.data_received(b"GET /health/live HTTP/1.1\r\n\r\n")  # ignored after an error
                self.assertEqual(len(parse_responses(t.out)), 1 if closes else 2)

    def test_backpressure_while_busy(self):
        c, t = self.connect()
        c.data_received(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        c.data_received((b"GET /health/live HTTP/1.1\r\nX-Pad: " + b"p" * 900 + b"\r\n\r\n") * 300)
        self.assertTrue(t.paused)  # more than 256 KiB waiting behind a busy request
        self.answer_all()
        self.assertFalse(t.paused)
        self.assertEqual(len(parse_responses(t.out)), 301)

    def test_drain_and_timeouts(self):
        idle, ti = self.connect()
        busy, tb = self.connect()
        busy.data_received(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        partial, tp = self.connect()
        partial.data_received(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab")
        self.srv.drain()
        self.assertTrue(ti.closed)
        self.assertFalse(tb.closed or tb.eof or tp.closed)
        self.answer_all()
        self.assertEqual(parse_responses(tb.out)[0][1]["connection"], "close")
        self.assertTrue(tb.eof)
        partial.check_timeouts(partial.started + 61)
        self.assertEqual(parse_responses(tp.out)[0][0], 408)
        c, t = self.connect()  # arriving while draining: dropped
        self.assertTrue(t.closed)
        srv2 = _http.HTTPServer(self.loop, self.dispatched.append, keepalive_timeout=5, access_log=False)
        c = srv2.protocol()
        t = FakeTransport()
        c.connection_made(t)
        c.check_timeouts(c.last + 4)
        self.assertFalse(t.closed)
        c.check_timeouts(c.last + 6)
        self.assertTrue(t.closed)

    def test_ready_flag(self):
        c, t = self.connect()
        self.srv.ready = False
        c.data_received(b"GET /health/ready HTTP/1.1\r\n\r\n")
        r = parse_responses(t.out)[0]
        self.assertEqual((r[0], json.loads(r[2])["error_code"]), (503, errors.NOT_READY))

    def test_fuzz(self):
        rnd = random.Random(11)
        seeds = [
            b"POST /x HTTP/1.1\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\n{\"a\"}",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            b"GET /health/live HTTP/1.1\r\nConnection: keep-alive\r\n\r\n",
            b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n[]",
        ]
        tokens = [b"\r\n", b"\r\n\r\n", b":", b" ", b"0", b"ffffff", b";", b"chunked", b"Content-Length: 9\r\n"]
        for _ in range(4000):
            b = bytearray(b"".join(rnd.choice(seeds) for _ in range(rnd.randint(1, 3))))
            for _ in range(rnd.randint(0, 5)):
                op = rnd.randint(0, 2)
                i = rnd.randrange(len(b) + 1)
                if op == 0 and b:
                    b[min(i, len(b) - 1)] = rnd.randrange(256)
                elif op == 1:
                    del b[i:i + rnd.randint(1, 10)]
                else:
                    b[i:i] = rnd.choice(tokens)
            c, t = self.connect()
            pos = 0
            while pos < len(b):
                n = rnd.randint(1, 40)
                c.data_received(bytes(b[pos:pos + n]))
                pos += n
                if rnd.random() < 0.5:
                    self.answer_all()
            self.answer_all()
            for status, _, body in parse_responses(t.out):
                self.assertIn(status, (100, 200, 400, 404, 405, 413, 431, 501, 505))
            self.assertEqual(self.srv.inflight, 0)
            c.connection_lost(None)
        self.assertEqual(self.srv.conns, set())


if __name__ == "__main__":
    unittest.main()
