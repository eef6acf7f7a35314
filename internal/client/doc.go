// Package client is the Go client of Atelier's REST API (/api/v1/...).
//
// A Client is built from a config.ClientConfig: every request is signed with
// AWS Signature V4 (service "atelier") using the configured access key pair,
// or, with WithToken, authenticated by an X-Auth-Token header instead.
// Requests and answers are the wire types of package api.
//
// Errors: an answer outside 2xx becomes an *APIError carrying the server's
// status, stable code, message, hint and request id; a server that cannot be
// reached gives an errs.Unavailable error whose message names the endpoint
// and whose hint names where the endpoint was configured.
//
// List methods take ListOptions (api.ListOptions: offset and limit) and
// return one page as an api.List; All fetches every page of any of them.
package client
