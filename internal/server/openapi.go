package server

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the API's description; tests check real responses against it.
//
//go:embed openapi.yaml
var OpenAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(OpenAPI)
}
