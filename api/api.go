// Package api holds the document library's API reference, embedded at
// build time so the gateway serves the very file the repository keeps:
// openapi.yaml (the one source), its JSON form (converted once, in
// memory), and the /docs page that renders it, with its renderer
// (Swagger UI) vendored at a pinned version by `make docs-assets`.
package api

import (
	"embed"
	"errors"
	"io/fs"
	"sync"

	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// docsFiles are the /docs page and its renderer. docs/dist holds the
// vendored renderer once `make docs-assets` ran, and only a README
// otherwise (go:embed needs the folder to hold something).
//
//go:embed docs/index.html docs/docs.js docs/dist
var docsFiles embed.FS

// YAML returns the OpenAPI document as written.
func YAML() []byte { return openAPIYAML }

// JSON returns the OpenAPI document as JSON (the same content; keys in
// sorted order).
func JSON() ([]byte, error) { return toJSON() }

var toJSON = sync.OnceValues(func() ([]byte, error) { return yaml.YAMLToJSON(openAPIYAML) })

// Renderer files, in docs/dist once vendored.
const (
	RendererScript = "swagger-ui-bundle.js"
	RendererStyle  = "swagger-ui.css"
)

// ErrNoRenderer means the binary was built without the vendored renderer
// (`go build` without `make docs-assets` first).
var ErrNoRenderer = errors.New("the /docs renderer (Swagger UI) was not vendored into this build: run `make docs-assets` (or `make build`) and build again")

// Docs returns the files of the /docs page: index.html and docs.js at its
// root, the renderer's files under assets/.
func Docs() (page fs.FS, assets fs.FS, err error) {
	page, err = fs.Sub(docsFiles, "docs")
	if err != nil {
		return nil, nil, err
	}
	assets, err = fs.Sub(docsFiles, "docs/dist")
	if err != nil {
		return nil, nil, err
	}
	for _, name := range []string{RendererScript, RendererStyle} {
		if _, err := fs.Stat(assets, name); err != nil {
			return nil, nil, ErrNoRenderer
		}
	}
	return page, assets, nil
}
