package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Online services (/api/v1/services) and inference.

// ServiceListOptions filters and pages the service list. Name matches a
// substring of the service name; Statuses keeps services in any of them.
type ServiceListOptions struct {
	Name     string
	Statuses []string
	Offset   int
	Limit    int
}

// ServiceLogLine and ServiceLogs are the wire types of an instance's log
// (GET /api/v1/services/{id}/logs), under the names callers of ServiceLogs
// know them by.
type (
	ServiceLogLine = api.ServiceLogLine
	ServiceLogs    = api.ServiceLogs
)

// DeployService deploys a service (POST /api/v1/services) and returns it
// with service_id, access_address and status deploying.
func (c *Client) DeployService(ctx context.Context, req *api.DeployRequest) (*api.Service, error) {
	out := &api.Service{}
	err := c.do(ctx, "client.DeployService", call{method: http.MethodPost, path: apiPath("services"), body: req, out: out})
	return ret(out, err)
}

// GetService gets a service by id.
func (c *Client) GetService(ctx context.Context, id string) (*api.Service, error) {
	out := &api.Service{}
	err := c.do(ctx, "client.GetService", call{method: http.MethodGet, path: apiPath("services", id), out: out})
	return ret(out, err)
}

// ListServices lists one page of services, newest first.
func (c *Client) ListServices(ctx context.Context, opts ServiceListOptions) (*api.List[api.Service], error) {
	q := url.Values{}
	if opts.Name != "" {
		q.Set("name", opts.Name)
	}
	if len(opts.Statuses) > 0 {
		q.Set("status", strings.Join(opts.Statuses, ","))
	}
	return getList[api.Service](ctx, c, "client.ListServices", apiPath("services"), q,
		ListOptions{Offset: opts.Offset, Limit: opts.Limit})
}

// UpdateService changes a service (PUT /api/v1/services/{id}).
func (c *Client) UpdateService(ctx context.Context, id string, req *api.UpdateServiceRequest) (*api.Service, error) {
	out := &api.Service{}
	err := c.do(ctx, "client.UpdateService", call{method: http.MethodPut, path: apiPath("services", id), body: req, out: out})
	return ret(out, err)
}

// StartService starts a stopped or failed service.
func (c *Client) StartService(ctx context.Context, id string) (*api.Service, error) {
	return c.UpdateService(ctx, id, &api.UpdateServiceRequest{Status: api.ServiceRunning})
}

// StopService stops a service: its instances are released.
func (c *Client) StopService(ctx context.Context, id string) (*api.Service, error) {
	return c.UpdateService(ctx, id, &api.UpdateServiceRequest{Status: api.ServiceStopped})
}

// DeleteService deletes a service; it is gone once its instances stopped.
func (c *Client) DeleteService(ctx context.Context, id string) error {
	return c.do(ctx, "client.DeleteService", call{method: http.MethodDelete, path: apiPath("services", id)})
}

// ServiceStats gets a service's request figures.
func (c *Client) ServiceStats(ctx context.Context, id string) (*api.ServiceStats, error) {
	out := &api.ServiceStats{}
	err := c.do(ctx, "client.ServiceStats", call{method: http.MethodGet, path: apiPath("services", id, "stats"), out: out})
	return ret(out, err)
}

// ServiceEvents lists one page of a service's events.
func (c *Client) ServiceEvents(ctx context.Context, id string, opts ListOptions) (*api.List[api.Event], error) {
	return getList[api.Event](ctx, c, "client.ServiceEvents", apiPath("services", id, "events"), nil, opts)
}

// ServiceLogs reads the last tail lines (0: the server's default) of one
// instance, or of every instance when instance is "".
func (c *Client) ServiceLogs(ctx context.Context, id, instance string, tail int) (*ServiceLogs, error) {
	q := url.Values{}
	if instance != "" {
		q.Set("instance", instance)
	}
	if tail > 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	out := &ServiceLogs{}
	err := c.do(ctx, "client.ServiceLogs", call{method: http.MethodGet, path: apiPath("services", id, "logs"), query: q, out: out})
	if err == nil && out.Lines == nil {
		out.Lines = []ServiceLogLine{}
	}
	return ret(out, err)
}

// Usage gets metered instance time and its cost: the caller's, or every
// user's with all (admins).
func (c *Client) Usage(ctx context.Context, all bool) (*api.Usage, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	out := &api.Usage{}
	err := c.do(ctx, "client.Usage", call{method: http.MethodGet, path: apiPath("usage"), query: q, out: out})
	if err == nil && out.Items == nil {
		out.Items = []api.UsageItem{}
	}
	return ret(out, err)
}

// Token is an API token for the caller: the one the client was given, or
// a new one exchanged for its access key pair (POST /api/v1/auth/tokens).
func (c *Client) Token(ctx context.Context) (string, error) {
	if c.token != "" {
		return c.token, nil
	}
	if c.creds.AccessKey == "" || c.creds.SecretKey == "" {
		return "", errs.E("client.Token", errs.Unauthenticated, CodeNoCredentials, "no access key pair to get a token with",
			errs.Hint("set access_key and secret_key with `atelier configure`"))
	}
	t, err := c.CreateToken(ctx, api.CreateTokenRequest{AccessKey: c.creds.AccessKey, SecretKey: c.creds.SecretKey})
	if err != nil {
		return "", err
	}
	return t.Token, nil
}

// Inference is one call of a service's inference address.
type Inference struct {
	URL         string // the access_address, possibly with a path after it
	ContentType string
	Body        []byte
	Token       string // sent as X-Auth-Token when set
	AppCode     string // sent as X-Apig-AppCode when set
}

// InferenceResult is the gateway's or the service's answer, whatever its
// status.
type InferenceResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// Infer sends an inference request. Any answer is a result; only a
// request that got none is an error.
func (c *Client) Infer(ctx context.Context, in Inference) (*InferenceResult, error) {
	const op errs.Op = "client.Infer"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(in.Body))
	if err != nil {
		return nil, errs.E(op, errs.Invalid, CodeBadEndpoint, fmt.Sprintf("bad inference URL %s", in.URL), err)
	}
	if in.ContentType != "" {
		req.Header.Set("Content-Type", in.ContentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if in.Token != "" {
		req.Header.Set("X-Auth-Token", in.Token)
	}
	if in.AppCode != "" {
		req.Header.Set("X-Apig-AppCode", in.AppCode)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, c.transportError(ctx, op, err)
	}
	return &InferenceResult{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}
