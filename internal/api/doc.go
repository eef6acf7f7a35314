// Package api holds the wire types of Atelier's REST API (/api/v1/...): the
// request and response bodies shared by the server (internal/apiserver) and
// the Go client (internal/client), the page a list asks for (ListOptions)
// and the bounds of query parameters (MaxListOffset, MaxListLimit,
// MaxLogLines). This is the only place they are defined: the services
// behind the REST API (auth, job, serving, model) take and answer these
// types and convert to and from their metadata records themselves. Field
// names are snake_case and follow ModelArts where it has one; times are
// epoch milliseconds.
//
// The routes themselves are listed in internal/apiserver and described for
// users in internal/apiserver/openapi.yaml.
package api
