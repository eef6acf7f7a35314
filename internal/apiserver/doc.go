// Package apiserver is Atelier's REST front end: the route table, the
// middleware every request passes (request id, panic recovery, metrics,
// access log, body limit, authentication) and thin handlers that decode a
// request, call the service that owns the capability, and encode the answer.
//
// Conventions (docs/api.md): JSON with snake_case fields; errors as
// {"error_code":"ATL.<AREA>.<NNNN>","error_msg","hint","request_id"} with the
// status of the error's kind; lists as {"total","count","items"} paged with
// offset/limit; times in epoch milliseconds; unknown JSON fields rejected by
// name. The contract is internal/apiserver/openapi.yaml, served at
// /api/openapi.yaml; a test keeps it and the route table in agreement.
//
// The handlers' dependencies are small interfaces this package owns, one
// per kind of use: training jobs as JobSubmitter, JobReader, JobActions
// and JobCatalog (Deps.Jobs), their runner protocol as RunnerFeed and
// RunnerReports (Deps.Runners); IAM is *auth.Service itself. Handlers
// speak only the wire types of package api: a list's page is an
// api.ListOptions, and every service answers api types, which it made from
// its records; this package imports no metadata package.
package apiserver
