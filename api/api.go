// Package api holds the document library's API reference, embedded at
// build time so the gateway serves the very file the repository keeps:
// openapi.yaml (the one source), its JSON form (converted once, in
// memory), and the /docs page that renders it, with its renderer
// (Swagger UI) vendored at a pinned version in docs/dist (its README says
// where from; SHA256SUMS holds the digests a test checks).
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

// docsFiles are the /docs page and its renderer, kept in git: a build
// needs Go only.
//
//go:embed docs/index.html docs/docs.js docs/dist/swagger-ui-bundle.js docs/dist/swagger-ui.css
//go:embed docs/dist/LICENSE docs/dist/NOTICE docs/dist/SHA256SUMS
var docsFiles embed.FS

// YAML returns the OpenAPI document as written.
func YAML() []byte { return openAPIYAML }

// JSON returns the OpenAPI document as JSON (the same content; keys in
// sorted order).
func JSON() ([]byte, error) { return toJSON() }

var toJSON = sync.OnceValues(func() ([]byte, error) { return yaml.YAMLToJSON(openAPIYAML) })

// Renderer files, in docs/dist.
const (
	RendererScript = "swagger-ui-bundle.js"
	RendererStyle  = "swagger-ui.css"
)

// ErrNoRenderer means a renderer file is missing from docs/dist.
var ErrNoRenderer = errors.New("the /docs renderer (Swagger UI) is missing from api/docs/dist: restore it from git")

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
