// Package api holds the document library's API reference, embedded at
// build time so the gateway serves the very file the repository keeps:
// openapi.yaml (the one source), its JSON form (converted once, in
// memory), and the /docs page that renders it. The renderer, Swagger UI,
// comes from the Go module github.com/swaggo/files/v2, pinned in go.mod
// like any dependency: the repository holds no built bundle.
package api

import (
	"embed"
	"errors"
	"io/fs"
	"sync"

	swaggerfiles "github.com/swaggo/files/v2"
	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// docsFiles are the /docs page and its script.
//
//go:embed docs/index.html docs/docs.js
var docsFiles embed.FS

// YAML returns the OpenAPI document as written.
func YAML() []byte { return openAPIYAML }

// JSON returns the OpenAPI document as JSON (the same content; keys in
// sorted order).
func JSON() ([]byte, error) { return toJSON() }

var toJSON = sync.OnceValues(func() ([]byte, error) { return yaml.YAMLToJSON(openAPIYAML) })

// Renderer files, from Swagger UI's release as the module embeds it.
const (
	RendererScript = "swagger-ui-bundle.js"
	RendererStyle  = "swagger-ui.css"
)

// ErrNoRenderer means a renderer file is missing from the module.
var ErrNoRenderer = errors.New("the /docs renderer (Swagger UI, github.com/swaggo/files/v2) lacks a file the page needs")

// Docs returns the files of the /docs page: index.html and docs.js at its
// root, and the renderer's files (RendererScript, RendererStyle).
func Docs() (page fs.FS, assets fs.FS, err error) {
	page, err = fs.Sub(docsFiles, "docs")
	if err != nil {
		return nil, nil, err
	}
	assets = swaggerfiles.FS
	for _, name := range []string{RendererScript, RendererStyle} {
		if _, err := fs.Stat(assets, name); err != nil {
			return nil, nil, ErrNoRenderer
		}
	}
	return page, assets, nil
}
