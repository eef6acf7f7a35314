"""The remote suite (remote_obs.py) against the in-memory fake S3 server,
plus what only a fake can show: retries after dropped connections and
503s, session tokens, environment variants."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fake_obs  # noqa: E402
import remote_obs  # noqa: E402

import moxing as mox  # noqa: E402
from moxing.file import _ops  # noqa: E402

AK, SK = "AKFAKE00000000000001", "fake-secret"
TMP_AK, TMP_SK, TOKEN = "AKTEMP00000000000002", "temp-secret", "session-token-123"
ENV = ("S3_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
       "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "MOX_TEST_BUCKET", "S3_USE_HTTPS", "ATELIER_CREDENTIALS_FILE")


class FakeServer:
    fake = None
    saved = {}

    @classmethod
    def start(cls):
        if cls.fake is None:
            cls.fake = fake_obs.FakeOBS({AK: SK, TMP_AK: TMP_SK}, tokens={TMP_AK: TOKEN})
            cls.endpoint = cls.fake.start()
            cls.fake.buckets["bkt"] = {}
        cls.saved = {k: os.environ.get(k) for k in ENV}
        for k in ENV:
            os.environ.pop(k, None)
        os.environ.update({"S3_ENDPOINT": cls.endpoint, "AWS_ACCESS_KEY_ID": AK,
                           "AWS_SECRET_ACCESS_KEY": SK, "MOX_TEST_BUCKET": "bkt"})
        _ops.client.reset_auth()

    @classmethod
    def restore(cls):
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _ops.client.reset_auth()


def tearDownModule():
    if FakeServer.fake is not None:
        FakeServer.fake.stop()


class FakeOBSTests(remote_obs.RemoteOBSTests):
    @classmethod
    def setUpClass(cls):
        FakeServer.start()
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        FakeServer.restore()


class FakeOnlyTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        FakeServer.start()
        cls.fake = FakeServer.fake

    @classmethod
    def tearDownClass(cls):
        FakeServer.restore()

    def setUp(self):
        _ops.client.reset_auth()
        mox.file.set_auth(retry_wait=0.01)
        self.fake.faults[:] = []

    def test_retries_dropped_connections_and_503(self):
        mox.file.write("obs://bkt/r/a.txt", "x")
        self.fake.faults[:] = ["drop", 503, "drop"]
        self.assertEqual(mox.file.read("obs://bkt/r/a.txt"), "x")
        self.assertEqual(self.fake.faults, [])
        self.fake.faults[:] = ["drop", 503]
        mox.file.write("obs://bkt/r/b.txt", "y")  # a PUT body is sent again
        self.assertEqual(mox.file.read("obs://bkt/r/b.txt"), "y")

    def test_gives_up_after_retries(self):
        mox.file.set_auth(retry=1)
        self.fake.faults[:] = [503, 503, 503]
        with self.assertRaises(mox.file.MoxFileRespException) as cm:
            mox.file.read("obs://bkt/r/a.txt")
        self.assertEqual(cm.exception.resp.status, 503)
        self.assertIn("SlowDown", str(cm.exception))
        self.fake.faults[:] = ["drop", "drop", "drop", "drop"]
        with self.assertRaises(mox.file.MoxFileConnectionException) as cm:
            mox.file.read("obs://bkt/r/a.txt")
        self.assertIn("cannot reach OBS", str(cm.exception))

    def test_unreachable_endpoint(self):
        mox.file.set_auth(server="http://127.0.0.1:1", retry=0)
        with self.assertRaises(mox.file.MoxFileConnectionException):
            mox.file.exists("obs://bkt/x")

    def test_session_token(self):
        mox.file.write("obs://bkt/t/a.txt", "tok")
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = TMP_AK, TMP_SK
        try:
            with self.assertRaises(mox.file.MoxFileRespException) as cm:
                mox.file.read("obs://bkt/t/a.txt")
            self.assertIn("InvalidToken", str(cm.exception))
            os.environ["AWS_SESSION_TOKEN"] = TOKEN
            self.assertEqual(mox.file.read("obs://bkt/t/a.txt"), "tok")
            del os.environ["AWS_SESSION_TOKEN"]
            mox.file.set_auth(security_token=TOKEN)
            self.assertEqual(mox.file.read("obs://bkt/t/a.txt"), "tok")
        finally:
            os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = AK, SK
            os.environ.pop("AWS_SESSION_TOKEN", None)

    def test_credentials_file(self):
        """Without keys in the environment, ATELIER_CREDENTIALS_FILE's are
        used, and read again after the file was replaced (renewed)."""
        import json
        import tempfile
        mox.file.write("obs://bkt/cf/a.txt", "cf")
        d = tempfile.mkdtemp()
        path = os.path.join(d, "credentials.json")

        def renew(ak, sk, token=None):
            doc = {"Version": 1, "AccessKeyId": ak, "SecretAccessKey": sk}
            if token:
                doc["SessionToken"] = token
            with open(path + ".tmp", "w") as f:
                json.dump(doc, f)
            os.replace(path + ".tmp", path)

        saved = {k: os.environ.pop(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        os.environ["ATELIER_CREDENTIALS_FILE"] = path
        try:
            with self.assertRaises(mox.file.MoxFileConfigException) as cm:
                mox.file.read("obs://bkt/cf/a.txt")
            self.assertIn("cannot read the credentials file", str(cm.exception))
            renew(TMP_AK, TMP_SK, TOKEN)
            self.assertEqual(mox.file.read("obs://bkt/cf/a.txt"), "cf")
            renew(TMP_AK, TMP_SK)  # no token: the fake refuses a temporary key without one
            with self.assertRaises(mox.file.MoxFileRespException) as cm:
                mox.file.read("obs://bkt/cf/a.txt")
            self.assertIn("InvalidToken", str(cm.exception))
            renew(AK, SK)
            self.assertEqual(mox.file.read("obs://bkt/cf/a.txt"), "cf")
            with open(path, "w") as f:
                f.write("{}")
            with self.assertRaises(mox.file.MoxFileConfigException):
                mox.file.read("obs://bkt/cf/a.txt")
            # Keys in the environment win over the file.
            os.environ.update(saved)
            self.assertEqual(mox.file.read("obs://bkt/cf/a.txt"), "cf")
        finally:
            os.environ.update(saved)
            os.environ.pop("ATELIER_CREDENTIALS_FILE", None)
            for name in os.listdir(d):
                os.remove(os.path.join(d, name))
            os.rmdir(d)

    def test_endpoint_forms(self):
        mox.file.write("obs://bkt/e/a.txt", "e")
        host_port = FakeServer.endpoint[len("http://"):]
        host, port = host_port.split(":")
        del os.environ["S3_ENDPOINT"]
        try:
            with self.assertRaises(mox.file.MoxFileConfigException):
                mox.file.read("obs://bkt/e/a.txt")
            os.environ["AWS_ENDPOINT_URL"] = FakeServer.endpoint
            self.assertEqual(mox.file.read("obs://bkt/e/a.txt"), "e")
            del os.environ["AWS_ENDPOINT_URL"]
            mox.file.set_auth(server=host, port=int(port), is_secure=False)
            self.assertEqual(mox.file.read("obs://bkt/e/a.txt"), "e")
            _ops.client.reset_auth()
            mox.file.set_auth(server=host_port, is_secure="false")
            self.assertEqual(mox.file.read("obs://bkt/e/a.txt"), "e")
        finally:
            os.environ["S3_ENDPOINT"] = FakeServer.endpoint
            os.environ.pop("AWS_ENDPOINT_URL", None)

    def test_set_auth_validation(self):
        with self.assertRaises(TypeError):
            _ops.client.set_auth(bogus=1)
        with self.assertRaises(mox.file.MoxFileConfigException):
            mox.file.set_auth(port="x")
        with self.assertRaises(mox.file.MoxFileConfigException):
            mox.file.set_auth(part_size=1)
        mox.file.set_auth(long_conn_mode=True)  # accepted, ignored

    def test_object_changed_while_reading(self):
        mox.file.write("obs://bkt/ch/a.bin", b"a" * 10000, binary=True)
        old = mox.file._file.READ_BUFFER
        mox.file._file.READ_BUFFER = 1000
        try:
            f = mox.file.File("obs://bkt/ch/a.bin", "rb")
            f.read(10)
            mox.file.write("obs://bkt/ch/a.bin", b"b" * 10000, binary=True)
            with self.assertRaises(mox.file.MoxFileReadException):
                f.read()
            f.close()
        finally:
            mox.file._file.READ_BUFFER = old

    def test_connection_reuse(self):
        mox.file.write("obs://bkt/cr/a", "1")
        conns = _ops.client._conns()
        before = dict(conns)
        for _ in range(5):
            mox.file.read("obs://bkt/cr/a")
        self.assertEqual(list(conns.values()), list(before.values()))

    @unittest.skipUnless(hasattr(os, "fork"), "needs fork")
    def test_forked_child_uses_its_own_connection(self):
        mox.file.write("obs://bkt/fork/a", "parent")
        parent_conn = list(_ops.client._conns().values())[0]
        pid = os.fork()
        if pid == 0:  # the child: read, then report through the exit status
            code = 1
            try:
                ok = mox.file.read("obs://bkt/fork/a") == "parent"
                fresh = parent_conn not in _ops.client._conns().values()
                code = 0 if ok and fresh else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode")
                         else status >> 8, 0)
        self.assertEqual(mox.file.read("obs://bkt/fork/a"), "parent")  # the parent's socket still works


if __name__ == "__main__":
    unittest.main()
