package apiserver

import (
	_ "embed"
	"net/http"

	"github.com/atelier-dev/atelier/internal/auth"
)

//go:embed openapi.yaml
var openapiSpec []byte

// OpenAPI returns the REST contract (OpenAPI 3, YAML).
func OpenAPI() []byte { return openapiSpec }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request, _ *auth.Principal) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(openapiSpec)
	return nil
}
