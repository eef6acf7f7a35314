"""Error codes the serving runtime returns in HTTP bodies.

Every error response is JSON: {"error_code": CODE, "error_msg": MESSAGE}.
"""

__all__ = ["HTTPError", "HANDLER_ERROR", "BAD_JSON", "BAD_MULTIPART", "BAD_REQUEST", "NOT_FOUND",
           "METHOD_NOT_ALLOWED", "BODY_TOO_LARGE", "HEADERS_TOO_LARGE", "NOT_READY",
           "BAD_VERSION", "BAD_TRANSFER_ENCODING", "REQUEST_TIMEOUT", "BAD_SECRET", "STUCK", "CODES"]

HANDLER_ERROR = "ATL.SVC.0500"          # 500: the handler raised, or its result is not JSON-serialisable
BAD_JSON = "ATL.SVC.0501"               # 400: a JSON request body does not parse
BAD_MULTIPART = "ATL.SVC.0502"          # 400: a multipart/form-data body is malformed
BAD_REQUEST = "ATL.SVC.0503"            # 400: malformed HTTP (request line, header, Content-Length, chunk)
NOT_FOUND = "ATL.SVC.0504"              # 404: GET of a path other than /health/live and /health/ready
METHOD_NOT_ALLOWED = "ATL.SVC.0505"     # 405: a method other than POST, GET and HEAD
BODY_TOO_LARGE = "ATL.SVC.0506"         # 413: the body exceeds --max-body
HEADERS_TOO_LARGE = "ATL.SVC.0507"      # 431: the request line and headers exceed --max-header
NOT_READY = "ATL.SVC.0508"              # 503: GET /health/ready while the server is not ready (draining)
BAD_VERSION = "ATL.SVC.0509"            # 505: an HTTP version other than 1.0 and 1.1
BAD_TRANSFER_ENCODING = "ATL.SVC.0510"  # 501: a Transfer-Encoding other than chunked
REQUEST_TIMEOUT = "ATL.SVC.0511"        # 408: a request not received completely within --request-timeout
BAD_SECRET = "ATL.SVC.0512"             # 403: no X-Atelier-Instance-Secret header, or not the --secret-fd one
STUCK = "ATL.SVC.0513"                  # 503: GET /health/live while every worker has run one request past --stuck-after

CODES = {
    HANDLER_ERROR: "the handler raised an exception or returned a value that is not JSON-serialisable",
    BAD_JSON: "the request body is not valid JSON",
    BAD_MULTIPART: "the multipart/form-data request body is malformed",
    BAD_REQUEST: "the HTTP request is malformed",
    NOT_FOUND: "no such path: POST any path to run the model; GET /health/live or /health/ready",
    METHOD_NOT_ALLOWED: "method not allowed: POST runs the model, GET and HEAD serve the health paths",
    BODY_TOO_LARGE: "the request body is larger than the instance accepts",
    HEADERS_TOO_LARGE: "the request line and headers are too large",
    NOT_READY: "the model is not ready (loading or shutting down)",
    BAD_VERSION: "HTTP version not supported (use HTTP/1.1 or HTTP/1.0)",
    BAD_TRANSFER_ENCODING: "Transfer-Encoding not supported (only chunked)",
    REQUEST_TIMEOUT: "the request was not received completely in time",
    BAD_SECRET: "the request does not carry this instance's secret",
    STUCK: "every worker has been running one request for longer than the instance allows: the handler is stuck",
}


class HTTPError(Exception):
    """An error answered with status, code and message."""

    def __init__(self, status, code, message):
        Exception.__init__(self, message)
        self.status = status
        self.code = code
        self.message = message
