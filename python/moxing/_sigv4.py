"""AWS Signature Version 4 for S3 requests (header-based signing).

Pure functions: they take every input explicitly (including the request
time) so that they can be tested against the published AWS examples.
"""

import hashlib
import hmac
from urllib.parse import quote

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def uri_encode(s, keep_slash=False):
    """Percent-encode s as SigV4 requires: every byte of its UTF-8 form
    outside A-Z a-z 0-9 - _ . ~ becomes %XX (upper-case hex); '/' is kept
    when keep_slash."""
    if isinstance(s, bytes):
        s = s.decode("utf-8")
    return quote(s, safe="-_.~/" if keep_slash else "-_.~")


def canonical_query(params):
    """The canonical query string of params, a list of (name, value) pairs
    (value None or "" for a bare sub-resource such as ?uploads)."""
    enc = sorted((uri_encode(k), uri_encode(v or "")) for k, v in params)
    return "&".join(k + "=" + v for k, v in enc)


def query_string(params):
    """The query string to send for params: names and values encoded as in
    the canonical form, in the given order, a None value sent bare."""
    parts = []
    for k, v in params:
        parts.append(uri_encode(k) if v is None else uri_encode(k) + "=" + uri_encode(v))
    return "&".join(parts)


def _trim(value):
    return " ".join(str(value).strip().split())


def canonical_request(method, path, params, headers, payload_hash):
    """The canonical request and the signed-headers list. path is the
    decoded path ("/bucket/key"), encoded once here as S3 expects; headers
    is a dict of the headers to sign."""
    names = sorted(h.lower() for h in headers)
    lowered = {h.lower(): v for h, v in headers.items()}
    canon_headers = "".join(n + ":" + _trim(lowered[n]) + "\n" for n in names)
    signed = ";".join(names)
    req = "\n".join([
        method,
        uri_encode(path, keep_slash=True) or "/",
        canonical_query(params),
        canon_headers,
        signed,
        payload_hash,
    ])
    return req, signed


def _hmac(key, msg):
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret_key, date, region, service):
    """The derived signing key for a day (YYYYMMDD), region and service."""
    k = _hmac(("AWS4" + secret_key).encode("utf-8"), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


def authorization(method, path, params, headers, payload_hash, access_key, secret_key,
                  region, amz_date, service="s3"):
    """The Authorization header value for a request. headers must already
    hold every header to sign (host, x-amz-date, x-amz-content-sha256, …);
    amz_date is the X-Amz-Date value (YYYYMMDDTHHMMSSZ)."""
    creq, signed = canonical_request(method, path, params, headers, payload_hash)
    date = amz_date[:8]
    scope = "/".join([date, region, service, "aws4_request"])
    to_sign = "\n".join([ALGORITHM, amz_date, scope,
                         hashlib.sha256(creq.encode("utf-8")).hexdigest()])
    sig = hmac.new(signing_key(secret_key, date, region, service),
                   to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return "%s Credential=%s/%s,SignedHeaders=%s,Signature=%s" % (
        ALGORITHM, access_key, scope, signed, sig)
