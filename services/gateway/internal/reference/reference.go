// Package reference serves the API reference on both of the gateway's
// listeners: /openapi.json and /openapi.yaml (the document embedded from
// api/openapi.yaml), and /docs, a page rendering it with every asset served
// from here (a Content-Security-Policy forbids any other origin). Each file
// is rendered once, in memory, and answered with a strong ETag, 304 and
// compression (libs/rendering).
package reference

import (
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/gin-gonic/gin"

	"github.com/doclib/api"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
)

// PageSecurity is the /docs page's Content-Security-Policy: scripts,
// styles, fonts and fetches from the gateway only (Swagger UI sets inline
// styles and uses data: images).
const PageSecurity = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Reference is the rendered files.
type Reference struct {
	json, yaml *rendering.Rendering
	page       map[string]*rendering.Rendering // by route path
	missing    error                           // why /docs cannot be served, if it cannot
}

// Load renders the embedded files. The OpenAPI document must convert; a
// build whose renderer module lacks a file the page needs still serves it,
// and answers /docs with a 503 saying so.
func Load() (*Reference, error) {
	j, err := api.JSON()
	if err != nil {
		return nil, fmt.Errorf("the embedded OpenAPI document: %w", err)
	}
	ref := &Reference{
		json: rendering.New("application/json; charset=utf-8", j),
		yaml: rendering.New("application/yaml; charset=utf-8", api.YAML()),
		page: map[string]*rendering.Rendering{},
	}
	page, assets, err := api.Docs()
	if err != nil {
		ref.missing = err
		return ref, nil
	}
	add := func(route string, files fs.FS, name string) error {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if path.Ext(name) == ".js" {
			ct = "text/javascript; charset=utf-8"
		}
		ref.page[route] = rendering.New(ct, b)
		return nil
	}
	for route, file := range map[string]string{"/docs": "index.html", "/docs/docs.js": "docs.js"} {
		if err := add(route, page, file); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{api.RendererScript, api.RendererStyle} {
		if err := add("/docs/assets/"+name, assets, name); err != nil {
			return nil, err
		}
	}
	return ref, nil
}

// Register adds the routes (GET and HEAD) to r.
func (ref *Reference) Register(r gin.IRoutes) {
	httpx.GET(r, "/openapi.json", serve(ref.json, ""))
	httpx.GET(r, "/openapi.yaml", serve(ref.yaml, ""))
	// A browser on /docs also asks for /favicon.ico: there is none, and a
	// 404 would log a line per page view.
	httpx.GET(r, "/favicon.ico", func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=86400")
		c.Status(http.StatusNoContent)
	})
	if ref.missing != nil {
		unavailable := func(c *gin.Context) { httpx.Fail(c, problem.Unavailable(ref.missing.Error())) }
		httpx.GET(r, "/docs", unavailable)
		httpx.GET(r, "/docs/*file", unavailable)
		return
	}
	for route, rd := range ref.page {
		csp := ""
		if route == "/docs" {
			csp = PageSecurity
		}
		httpx.GET(r, route, serve(rd, csp))
	}
}

func serve(rd *rendering.Rendering, csp string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if csp != "" {
			c.Header("Content-Security-Policy", csp)
		}
		rd.Serve(c.Writer, c.Request, rendering.Public)
	}
}
