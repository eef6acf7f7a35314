"""Request bodies to handler data, handler results to JSON.

Decoding by Content-Type (the media type, parameters aside):
    application/json, text/json, */*+json   json.loads (UTF-8/16/32, or the
                                            charset parameter); invalid -> 400 ATL.SVC.0501
    multipart/form-data                     {field: {filename: UploadedFile}} for file
                                            parts, {field: str} for text parts (a
                                            repeated text field: a list of str);
                                            malformed -> 400 ATL.SVC.0502
    application/x-www-form-urlencoded       JSON when the body is a JSON object or
                                            array (what `curl -d '{...}'` sends), else
                                            {name: str} (repeated: list of str)
    no Content-Type                         JSON, as for application/json
    anything else                           {"data": <the body as bytes>}
An empty body is {} whatever the type.
"""

import datetime
import decimal
import io
import json
import urllib.parse

from .errors import BAD_JSON, BAD_MULTIPART, BAD_REQUEST, HTTPError

__all__ = ["UploadedFile", "decode", "encode", "parse_multipart", "parse_header_params"]


class UploadedFile(io.BytesIO):
    """An uploaded file: a BytesIO holding the part's content, with the
    attributes handlers written for werkzeug's FileStorage use."""

    def __init__(self, content=b"", filename="", content_type="application/octet-stream"):
        io.BytesIO.__init__(self, content)
        self.filename = filename
        self.content_type = content_type

    @property
    def name(self):
        return self.filename

    @property
    def mimetype(self):
        return self.content_type.split(";", 1)[0].strip().lower()

    @property
    def stream(self):
        return self

    def save(self, dst):
        """Write the whole content to dst, a path or a binary file object."""
        data = self.getvalue()
        if hasattr(dst, "write"):
            dst.write(data)
            return
        with open(dst, "wb") as f:
            f.write(data)

    def __repr__(self):
        return "<UploadedFile %r (%s, %d bytes)>" % (self.filename, self.content_type, len(self.getbuffer()))


def _skip_ws(s, i):
    n = len(s)
    while i < n and s[i] in " \t":
        i += 1
    return i


def parse_header_params(value):
    """Split a header value such as `form-data; name="a"; filename*=UTF-8''%C3%A9.jpg`
    into (main value lowercased, {param name lowercased: value}). Quoted
    strings may hold ';' and backslash escapes; name*=charset'lang'pct-encoded
    (RFC 5987) is decoded and wins over name=."""
    i = 0
    n = len(value)
    j = value.find(";")
    if j < 0:
        return value.strip().lower(), {}
    main = value[:j].strip().lower()
    i = j + 1
    params = {}
    extended = {}
    while i < n:
        i = _skip_ws(value, i)
        k = i
        while i < n and value[i] not in "=;":
            i += 1
        name = value[k:i].strip().lower()
        if i >= n or value[i] == ";":
            i += 1
            continue  # a parameter without a value
        i = _skip_ws(value, i + 1)
        if i < n and value[i] == '"':
            i += 1
            out = []
            while i < n and value[i] != '"':
                if value[i] == "\\" and i + 1 < n:
                    i += 1
                out.append(value[i])
                i += 1
            v = "".join(out)
            i += 1  # the closing quote
            while i < n and value[i] != ";":
                i += 1
        else:
            k = i
            while i < n and value[i] != ";":
                i += 1
            v = value[k:i].strip()
        i += 1
        if not name:
            continue
        if name.endswith("*"):
            charset, sep, rest = v.partition("'")
            if sep:
                _lang, sep, encoded = rest.partition("'")
                if sep:
                    try:
                        extended[name[:-1]] = urllib.parse.unquote(encoded, encoding=charset or "utf-8",
                                                                   errors="replace")
                    except LookupError:  # an unknown charset
                        extended[name[:-1]] = urllib.parse.unquote(encoded, errors="replace")
                    continue
            extended[name[:-1]] = urllib.parse.unquote(v, errors="replace")
        else:
            params[name] = v
    params.update(extended)
    return main, params


def _bad_multipart(msg):
    return HTTPError(400, BAD_MULTIPART, "malformed multipart/form-data body: " + msg)


def _text(b):
    """Header bytes as text: UTF-8 (what browsers send), else Latin-1."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("latin-1")


def parse_multipart(body, content_type):
    """Parse a multipart/form-data body (bytes) with the boundary of the
    Content-Type value content_type (str). Returns the handler data dict;
    raises HTTPError 400 ATL.SVC.0502 when the body is malformed."""
    _, params = parse_header_params(content_type)
    boundary = params.get("boundary")
    if not boundary:
        raise _bad_multipart("the Content-Type has no boundary parameter")
    if len(boundary) > 200:
        raise _bad_multipart("the boundary is longer than 200 characters")
    delim = b"--" + boundary.encode("latin-1", "replace")
    if body.startswith(delim):
        pos = len(delim)
    else:
        k = body.find(b"\r\n" + delim)
        if k < 0:
            raise _bad_multipart("the boundary %r does not occur in the body" % boundary)
        pos = k + 2 + len(delim)
    sep = b"\r\n" + delim
    out = {}
    count = 0
    while True:
        if body.startswith(b"--", pos):
            return out  # the close delimiter; the epilogue is ignored
        # transport padding, then the line break ending the delimiter line
        while pos < len(body) and body[pos] in b" \t":
            pos += 1
        if body.startswith(b"\r\n", pos):
            pos += 2
        elif body.startswith(b"\n", pos):
            pos += 1
        else:
            raise _bad_multipart("no line break after a boundary delimiter (missing closing '--%s--'?)" % boundary)
        if body.startswith(b"\r\n", pos):
            head = b""
            start = pos + 2
        else:
            end = body.find(b"\r\n\r\n", pos)
            if end < 0:
                raise _bad_multipart("a part's headers do not end with an empty line")
            head = body[pos:end]
            start = end + 4
        nxt = body.find(sep, start)
        if nxt < 0:
            raise _bad_multipart("a part is not terminated by the boundary (truncated body?)")
        count += 1
        if count > 10000:
            raise _bad_multipart("more than 10000 parts")
        _add_part(out, head, body[start:nxt])
        pos = nxt + len(sep)


def _add_part(out, head, content):
    disposition = None
    ctype = None
    for line in head.split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon:
            raise _bad_multipart("a part header line has no colon: %r" % line[:80])
        name = name.strip().lower()
        if name == b"content-disposition":
            disposition = _text(value.strip())
        elif name == b"content-type":
            ctype = _text(value.strip())
    if disposition is None:
        raise _bad_multipart("a part has no Content-Disposition header")
    _, params = parse_header_params(disposition)
    field = params.get("name")
    if field is None:
        raise _bad_multipart("a part's Content-Disposition has no name parameter")
    filename = params.get("filename")
    if filename is not None:
        slot = out.get(field)
        if not isinstance(slot, dict):
            slot = out[field] = {}
        slot[filename] = UploadedFile(content, filename, ctype or "application/octet-stream")
        return
    charset = "utf-8"
    if ctype:
        charset = parse_header_params(ctype)[1].get("charset", "utf-8")
    try:
        text = content.decode(charset, "replace")
    except LookupError:
        text = content.decode("utf-8", "replace")
    prev = out.get(field)
    if prev is None:
        out[field] = text
    elif isinstance(prev, list):
        prev.append(text)
    elif isinstance(prev, str):
        out[field] = [prev, text]
    else:
        raise _bad_multipart("field %r is sent both as a file and as text" % field)


def _media_type(content_type):
    return content_type.split(";", 1)[0].strip().lower()


def _json(body, content_type):
    charset = None
    if ";" in content_type:
        charset = parse_header_params(content_type)[1].get("charset")
    try:
        if charset and charset.lower().replace("_", "-") not in ("utf-8", "utf8", "utf-16", "utf-32"):
            return json.loads(body.decode(charset))
        return json.loads(body)
    except LookupError:
        raise HTTPError(400, BAD_JSON, "unknown charset %r in the Content-Type" % charset)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise HTTPError(400, BAD_JSON, "the request body is not valid JSON: %s" % e)
    except RecursionError:
        raise HTTPError(400, BAD_JSON, "the request body is not valid JSON: nested too deeply")


def _form(body):
    out = {}
    try:
        pairs = urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True,
                                       max_num_fields=100000)
    except ValueError as e:
        raise HTTPError(400, BAD_REQUEST, "the form body does not parse: %s" % e)
    for k, v in pairs:
        prev = out.get(k)
        if prev is None:
            out[k] = v
        elif isinstance(prev, list):
            prev.append(v)
        else:
            out[k] = [prev, v]
    return out


def decode(body, content_type):
    """The handler data for a request body (bytes) of the given Content-Type
    (str, "" when absent). Raises HTTPError for a malformed body."""
    if not body:
        return {}
    mt = _media_type(content_type)
    if mt == "application/json" or mt == "" or mt.endswith("+json") or mt == "text/json":
        return _json(body, content_type)
    if mt == "multipart/form-data":
        return parse_multipart(body, content_type)
    if mt == "application/x-www-form-urlencoded":
        if body.lstrip()[:1] in (b"{", b"["):
            try:
                return json.loads(body)
            except (ValueError, RecursionError):
                pass
        return _form(body)
    return {"data": body}


def _default(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        raise TypeError("the result holds %s, which JSON cannot carry: decode it, or base64-encode "
                        "it (base64.b64encode(b).decode())" % type(o).__name__)
    tolist = getattr(o, "tolist", None)  # numpy arrays and scalars, torch tensors
    if tolist is not None and callable(tolist):
        return tolist()
    if isinstance(o, decimal.Decimal):
        return float(o)
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, (datetime.datetime, datetime.date, datetime.time)):
        return o.isoformat()
    raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)


_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_default)


def encode(result):
    """The JSON response body (UTF-8 bytes) of a handler result. numpy
    values and torch tensors are converted with .tolist(), Decimal to float,
    sets to lists, dates to ISO 8601 strings. A lone surrogate in a string
    is written as its \\uXXXX escape, so the body is always valid UTF-8."""
    return _encoder.encode(result).encode("utf-8", "backslashreplace")

