// Package api holds the wire types of Atelier's REST API (/api/v1/...): the
// request and response bodies shared by the server (internal/apiserver) and
// the Go client (internal/client). Field names are snake_case and follow
// ModelArts where it has one; times are epoch milliseconds.
//
// The routes themselves are listed in internal/apiserver and described for
// users in internal/apiserver/openapi.yaml.
package api
