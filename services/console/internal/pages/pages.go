// Package pages owns the console's web pages: the routes under /console/,
// sign-in and sessions, the server-rendered templates and the small
// script and style sheet they use, all embedded in the binary.
package pages

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
	"github.com/doclib/services/console/internal/signin"
)

// Base is the path every console page is under.
const Base = "/console"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Config is what the pages need.
type Config struct {
	API      *boclient.Client
	Sessions *session.Store
	Log      *slog.Logger
	// SecureCookie marks the session cookie Secure (the console is
	// reached over TLS).
	SecureCookie bool
	// TokenSignIn offers the sign-in with a back-office API token.
	TokenSignIn bool
	// Development says the deployment is a development one (make dev):
	// the sign-in page names its tokens.
	Development bool
	// OIDC, when not nil, offers the sign-in at the OpenID provider.
	OIDC *signin.Provider
	// Origin is where browsers reach the console (scheme and host).
	Origin string
	// SignInFailures counts failed token sign-ins per browser address;
	// nil counts nothing.
	SignInFailures *ratelimit.Limiter
	// Timeout bounds each page's calls to the API.
	Timeout time.Duration
}

// Pages serves the console.
type Pages struct {
	cfg    Config
	pages  map[string]*template.Template
	lists  listCache
	states stateCache
}

// New parses the templates.
func New(cfg Config) (*Pages, error) {
	p := &Pages{cfg: cfg, pages: map[string]*template.Template{}}
	if cfg.API != nil && cfg.Sessions != nil {
		cfg.API.OnRejected(cfg.Sessions.EndToken)
	}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, "/layout.html") || strings.HasPrefix(n, "templates/_") {
			continue
		}
		// Files named _*.html hold blocks any page may use.
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return nil, err
		}
		p.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	return p, nil
}

var funcs = template.FuncMap{
	"join":      strings.Join,
	"list":      func(s []string) string { return strings.Join(s, ", ") },
	"size":      size,
	"has":       slices.Contains[[]string],
	"when":      when,
	"kind":      kind,
	"mediaKind": mediaKind,
	"thumbable": thumbable,
	"thumb":     thumb,
	"imageRef":  imageRef,
}

// Register adds the console's routes to r.
func (p *Pages) Register(r gin.IRouter) {
	static, _ := fs.Sub(staticFiles, "static")
	r.GET(Base, func(c *gin.Context) { c.Redirect(http.StatusFound, Base+"/") })
	r.StaticFS(Base+"/static", noListing{http.FS(static)})
	r.GET(Base+"/sign-in", p.signInPage)
	r.POST(Base+"/sign-in", p.signIn)
	r.POST(Base+"/sign-in/provider", p.withOIDC, p.startOIDC)
	r.GET(signin.CallbackPath, p.withOIDC, p.finishOIDC)
	r.POST(Base+"/sign-out", p.signOut)

	g := r.Group(Base, p.requireSession)
	g.GET("/", p.documents)
	g.GET("/documents/:id/delete", p.requireEditor, p.confirmDeleteDocument)
	g.POST("/documents/:id/delete", p.requireEditor, p.deleteDocument)
	g.POST("/documents/bulk", p.requireEditor, p.bulk)
	g.POST("/documents/:id/restore", p.requireEditor, p.restoreDocument)
	g.GET("/documents/new", p.newDocument)
	g.POST("/documents/new", p.requireEditor, p.createDocument)
	g.POST("/documents/preview", p.requireEditor, p.livePreview)
	g.GET("/documents/related", p.relatedSearch)
	g.GET("/documents/:id", p.editDocument)
	g.POST("/documents/:id", p.requireEditor, p.updateDocument)
	g.POST("/documents/:id/unpublish", p.requireEditor, p.editorialAction("unpublished", unpublish))
	g.POST("/documents/:id/discard", p.requireEditor, p.editorialAction("discarded", discard))
	g.GET("/documents/:id/revisions", p.revisionsPage)
	g.GET("/documents/:id/revisions/:rev", p.revisionPage)
	g.POST("/documents/:id/revisions/:rev/restore", p.requireEditor, p.restoreRevision)

	g.GET("/tags", p.tagsPage)
	g.POST("/tags", p.requireEditor, p.createTag)
	g.POST("/tags/:id", p.requireEditor, p.renameTag)
	g.GET("/tags/:id/delete", p.requireEditor, p.confirmDelete("tag"))
	g.POST("/tags/:id/delete", p.requireEditor, p.deleteTag)
	g.POST("/categories", p.requireEditor, p.createCategory)
	g.POST("/categories/:id", p.requireEditor, p.renameCategory)
	g.GET("/categories/:id/delete", p.requireEditor, p.confirmDelete("category"))
	g.POST("/categories/:id/delete", p.requireEditor, p.deleteCategory)

	g.GET("/media", p.mediaPage)
	g.POST("/media", p.requireEditor, p.uploadMedia)
	g.GET("/media/:id/download", p.downloadMedia)
	g.POST("/media/:id/delete", p.requireEditor, p.deleteMedia)

	g.GET("/help", p.helpPage)
	g.GET("/settings", p.settingsPage)
	g.POST("/settings", p.requireEditor, p.saveSettings)
}

// view is what every page template gets.
type view struct {
	Title   string
	Session session.Session
	Notice  string
	Error   *boclient.APIError
	Data    any
	// Refresh, when set, is where the page moves on to at once (a meta
	// refresh, which no CSP directive stops).
	Refresh string
}

// render writes page name with status.
func (p *Pages) render(c *gin.Context, status int, name string, v view) {
	t, ok := p.pages[name]
	if !ok {
		p.cfg.Log.Error("no such page", "page", name)
		c.Status(http.StatusInternalServerError)
		return
	}
	if s, ok := c.Get(sessionKey); ok {
		v.Session = s.(session.Session)
	}
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Status(status)
	if err := t.Execute(c.Writer, v); err != nil {
		p.cfg.Log.Error("render", "page", name, "err", err)
	}
}

// status is the HTTP status a page failing with e answers with.
func status(e *boclient.APIError) int {
	if e.Status == 0 {
		return http.StatusServiceUnavailable
	}
	return e.Status
}

// noListing serves files only: a directory is not found, never listed.
type noListing struct{ http.FileSystem }

func (fs noListing) Open(name string) (http.File, error) {
	f, err := fs.FileSystem.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		return nil, os.ErrNotExist
	}
	return f, nil
}

// writing is the session and the API deadline of a one-click write; a
// request without a session is answered here (ok false).
func (p *Pages) writing(c *gin.Context) (session.Session, context.Context, context.CancelFunc, bool) {
	s, ok := current(c)
	if !ok {
		p.render(c, http.StatusUnauthorized, "error", view{Title: "Session ended", Error: sessionEnded})
		return s, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	return s, ctx, cancel, true
}
