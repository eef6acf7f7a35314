"""SigV4 signing against the examples of the AWS S3 documentation
("Signature Calculations for the Authorization Header")."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from moxing import _sigv4  # noqa: E402

AK = "AKIAIOSFODNN7EXAMPLE"
SK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DATE = "20130524T000000Z"
HOST = "examplebucket.s3.amazonaws.com"


class AWSExamples(unittest.TestCase):
    def check(self, method, path, params, headers, payload, signed, signature):
        got = _sigv4.authorization(method, path, params, headers, payload, AK, SK, "us-east-1", DATE)
        self.assertEqual(got, "AWS4-HMAC-SHA256 Credential=%s/20130524/us-east-1/s3/aws4_request,"
                              "SignedHeaders=%s,Signature=%s" % (AK, signed, signature))

    def test_get_object(self):
        self.check("GET", "/test.txt", [], {
            "Host": HOST, "Range": "bytes=0-9", "x-amz-content-sha256": _sigv4.EMPTY_SHA256,
            "x-amz-date": DATE}, _sigv4.EMPTY_SHA256, "host;range;x-amz-content-sha256;x-amz-date",
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")

    def test_put_object(self):
        payload = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        self.assertEqual(__import__("hashlib").sha256(b"Welcome to Amazon S3.").hexdigest(), payload)
        self.check("PUT", "/test$file.text", [], {
            "Host": HOST, "Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-date": DATE,
            "x-amz-storage-class": "REDUCED_REDUNDANCY", "x-amz-content-sha256": payload}, payload,
            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")

    def test_get_bucket_lifecycle(self):
        self.check("GET", "/", [("lifecycle", None)], {
            "Host": HOST, "x-amz-date": DATE, "x-amz-content-sha256": _sigv4.EMPTY_SHA256},
            _sigv4.EMPTY_SHA256, "host;x-amz-content-sha256;x-amz-date",
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")

    def test_list_objects(self):
        self.check("GET", "/", [("prefix", "J"), ("max-keys", "2")], {
            "Host": HOST, "x-amz-date": DATE, "x-amz-content-sha256": _sigv4.EMPTY_SHA256},
            _sigv4.EMPTY_SHA256, "host;x-amz-content-sha256;x-amz-date",
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")


class Canonical(unittest.TestCase):
    def test_uri_encode(self):
        for s, slash, want in (
                ("a b/c", True, "a%20b/c"), ("a b/c", False, "a%20b%2Fc"), ("-_.~", False, "-_.~"),
                ("中", True, "%E4%B8%AD"), ("+=&?#%", True, "%2B%3D%26%3F%23%25"), ("", True, "")):
            self.assertEqual(_sigv4.uri_encode(s, slash), want, s)

    def test_query(self):
        params = [("uploadId", "a+b"), ("partNumber", "2"), ("uploads", None), ("b", "x y")]
        self.assertEqual(_sigv4.canonical_query(params), "b=x%20y&partNumber=2&uploadId=a%2Bb&uploads=")
        self.assertEqual(_sigv4.query_string(params), "uploadId=a%2Bb&partNumber=2&uploads&b=x%20y")

    def test_canonical_request_trims_headers(self):
        req, signed = _sigv4.canonical_request("GET", "/b/k k", [], {"Host": "h", "X-Amz-Meta-A": "  a   b "}, "UNSIGNED-PAYLOAD")
        self.assertEqual(signed, "host;x-amz-meta-a")
        self.assertEqual(req, "GET\n/b/k%20k\n\nhost:h\nx-amz-meta-a:a b\n\nhost;x-amz-meta-a\nUNSIGNED-PAYLOAD")


if __name__ == "__main__":
    unittest.main()
