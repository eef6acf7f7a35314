package gateway

import "strings"

// pathKind is what a gateway path asks for.
type pathKind uint8

const (
	pathNone         pathKind = iota
	pathInfer                 // /v1/infers/{service_id}[/rest]
	pathV2Server              // /v2 (server metadata)
	pathV2Live                // /v2/health/live
	pathV2Ready               // /v2/health/ready
	pathV2Model               // /v2/models/{name}[/versions/{v}]
	pathV2ModelReady          // /v2/models/{name}[/versions/{v}]/ready
	pathV2Infer               // /v2/models/{name}[/versions/{v}]/infer
)

// target is a parsed gateway path.
type target struct {
	kind    pathKind
	id      string // service id (pathInfer) or v2 model name
	version string // v2 /versions/{v}: a model id of the service
	rest    string // pathInfer: the path forwarded to the instance ("/" at least), escaped as received
}

const (
	v1Prefix = "/v1/infers/"
	v2Models = "/v2/models/"
)

// parsePath parses an escaped request path. Segments are taken as they are
// (service ids and names need no escaping); the rest of a /v1/infers path is
// forwarded unchanged, query excluded.
func parsePath(p string) target {
	if rest, ok := strings.CutPrefix(p, v1Prefix); ok {
		id, _, _ := strings.Cut(rest, "/")
		if id == "" {
			return target{}
		}
		fwd := rest[len(id):]
		if fwd == "" {
			fwd = "/"
		}
		return target{kind: pathInfer, id: id, rest: fwd}
	}
	switch p {
	case "/v2", "/v2/":
		return target{kind: pathV2Server}
	case "/v2/health/live":
		return target{kind: pathV2Live}
	case "/v2/health/ready":
		return target{kind: pathV2Ready}
	}
	rest, ok := strings.CutPrefix(p, v2Models)
	if !ok {
		return target{}
	}
	name, rest, _ := strings.Cut(rest, "/")
	if name == "" {
		return target{}
	}
	t := target{id: name}
	if v, ok := strings.CutPrefix(rest, "versions/"); ok {
		t.version, rest, _ = strings.Cut(v, "/")
		if t.version == "" {
			return target{}
		}
	}
	switch rest {
	case "":
		t.kind = pathV2Model
	case "ready":
		t.kind = pathV2ModelReady
	case "infer":
		t.kind = pathV2Infer
	default:
		return target{}
	}
	return t
}
