package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
)

// SigV4 scope of REST requests.
const (
	Region  = "us-east-1"
	Service = "atelier"
)

// Error codes of failures detected on the client side.
const (
	CodeUnreachable   errs.Code = "ATL.CLI.0001" // the server did not answer
	CodeBadResponse   errs.Code = "ATL.CLI.0002" // the server's answer could not be decoded
	CodeNoCredentials errs.Code = "ATL.CLI.0003" // no key pair and no token to authenticate with
	CodeBadEndpoint   errs.Code = "ATL.CLI.0004" // the endpoint is not an http(s) URL
)

// maxResponse bounds how much of an answer is read.
const maxResponse = 64 << 20

// Client calls one Atelier server. It is safe for concurrent use.
type Client struct {
	endpoint   string // scheme://host[:port][/prefix], no trailing slash
	creds      sigv4.Credentials
	token      string
	hc         *http.Client
	userAgent  string
	configPath string
	now        func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithToken authenticates every request with the X-Auth-Token header instead
// of a SigV4 signature.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sends requests through hc instead of a default client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithSessionToken adds a session token to the signing credentials, as
// temporary credentials (AWS_SESSION_TOKEN) need.
func WithSessionToken(token string) Option {
	return func(c *Client) { c.creds.SessionToken = token }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithConfigPath names where the endpoint was configured (a file or an
// environment variable); hints about an unreachable server point there.
func WithConfigPath(path string) Option { return func(c *Client) { c.configPath = path } }

// New returns a Client for the server and credentials in cfg. Only the
// endpoint is required: calls that need authentication fail without a key
// pair or a token. Without WithHTTPClient, requests go through an
// http.Client whose requests time out after 5 minutes.
func New(cfg *config.ClientConfig, opts ...Option) (*Client, error) {
	const op errs.Op = "client.New"
	if err := config.ClientValidateURL("endpoint", cfg.Endpoint); err != nil {
		return nil, errs.E(op, CodeBadEndpoint, err)
	}
	c := &Client{
		endpoint:  strings.TrimRight(cfg.Endpoint, "/"),
		creds:     sigv4.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey},
		hc:        &http.Client{Timeout: 5 * time.Minute},
		userAgent: "atelier-go-client",
		now:       time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Endpoint is the server's base URL.
func (c *Client) Endpoint() string { return c.endpoint }

// call describes one request.
type call struct {
	method string
	path   string     // escaped, from apiPath or a literal
	query  url.Values // may be nil
	body   any        // marshalled as JSON; nil sends no body
	out    any        // the 2xx answer is decoded into it; nil discards it
	noAuth bool       // send no credentials (token creation, health)
	also   int        // a non-2xx status whose answer is decoded into out as well
	raw    *[]byte    // the 2xx answer's bytes as they came (out is ignored)
}

// apiPath builds /api/v1/<segs...> with every segment path-escaped.
func apiPath(segs ...string) string {
	var b strings.Builder
	b.WriteString("/api/v1")
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// do sends k and decodes the answer.
func (c *Client) do(ctx context.Context, op errs.Op, k call) error {
	req, body, err := c.newRequest(ctx, op, k)
	if err != nil {
		return err
	}
	if !k.noAuth {
		if err := c.authenticate(op, req, body); err != nil {
			return err
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(ctx, op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return c.transportError(ctx, op, err)
	}
	if (resp.StatusCode < 200 || resp.StatusCode > 299) && resp.StatusCode != k.also {
		return decodeAPIError(resp, data)
	}
	if k.raw != nil {
		*k.raw = data
		return nil
	}
	if k.out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, k.out); err != nil {
		return errs.E(op, errs.IO, CodeBadResponse,
			fmt.Sprintf("unexpected answer to %s %s from %s: %v", k.method, k.path, c.endpoint, err),
			errs.Hint("check that the endpoint is an Atelier server of a compatible version"))
	}
	return nil
}

// newRequest builds the HTTP request of k and returns it with its body.
func (c *Client) newRequest(ctx context.Context, op errs.Op, k call) (*http.Request, []byte, error) {
	var body []byte
	if k.body != nil {
		b, err := json.Marshal(k.body)
		if err != nil {
			return nil, nil, errs.E(op, errs.Invalid, "cannot encode the request", err)
		}
		body = b
	}
	target := c.endpoint + k.path
	if len(k.query) > 0 {
		target += "?" + k.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, k.method, target, bytes.NewReader(body))
	if err != nil {
		return nil, nil, errs.E(op, errs.Invalid, CodeBadEndpoint, fmt.Sprintf("bad request URL %s", target), err)
	}
	if body == nil {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	return req, body, nil
}

// authenticate adds the token header or the SigV4 signature to req.
func (c *Client) authenticate(op errs.Op, req *http.Request, body []byte) error {
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
		return nil
	}
	if c.creds.AccessKey == "" || c.creds.SecretKey == "" {
		return errs.E(op, errs.Unauthenticated, CodeNoCredentials, "no access key pair or token to authenticate with",
			errs.Hint("set access_key and secret_key with `atelier configure`"))
	}
	sigv4.SignRequest(req, c.creds, Region, Service, sigv4.HashPayload(body), c.now())
	return nil
}
