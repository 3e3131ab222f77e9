package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/services/catalog/internal/document"
)

// download serves a document's file: PDF streams the media's bytes from the
// media service (Range and conditional headers pass through); MARKDOWN and
// HTML serve the content as a file; LINK has none.
func (h *Handler) download(admin bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		// Finding the document shares one budget; the stream that follows
		// takes none.
		whole := c.Request
		ctx, cancel := httpx.WithBudget(whole.Context())
		c.Request = whole.WithContext(ctx)
		_, found, err := h.find(c, sideOf(admin))
		c.Request = whole
		cancel()
		if err != nil {
			fail(c, err)
			return
		}
		d := *found
		switch {
		case d.Type == document.PDF && d.File != nil:
			if !documentDates(c, d.UpdatedAt) {
				return
			}
			c.Request.URL.Path = "/internal/medias/" + url.PathEscape(d.File.ID) + "/download"
			h.media.ServeHTTP(c.Writer, c.Request)
		case d.Type.Inline():
			serveContent(c, d)
		default:
			fail(c, document.ErrNoFile)
		}
	}
}

// documentDates makes the date validators of a PDF download the document's,
// not its media's: the media's time stays old when a PATCH points the
// document at an older media, so an If-Modified-Since from before the PATCH
// would be answered 304 with the wrong file. The document's updatedAt moves
// at every write, and a media is older than any document that names it, so
// evaluating the dates against it here, and sending it as Last-Modified,
// changes them whenever what the download serves changes. ETags (the
// media's SHA-256, which identifies the bytes) pass through to the media
// service untouched. It returns false when it has answered (412).
func documentDates(c *gin.Context, updated time.Time) bool {
	r := c.Request
	if v := r.Header.Get("If-Unmodified-Since"); v != "" && r.Header.Get("If-Match") == "" {
		if t, err := http.ParseTime(v); err == nil && updated.After(t) {
			problem.Write(c.Writer, problem.New(http.StatusPreconditionFailed, "precondition_failed",
				"the file does not match the request's If-Match or If-Unmodified-Since"))
			c.Abort()
			return false
		}
	}
	r.Header.Del("If-Unmodified-Since") // holds for the document; the media is older
	if r.Header.Get("If-None-Match") != "" {
		r.Header.Del("If-Modified-Since") // the media's ETag decides
	}
	// HTTP dates have seconds: httpx.LastModified says which date is
	// provably this version's. Changed since (or maybe): the whole file.
	// Unchanged: the media, older than the document, answers 304 too.
	modified := httpx.LastModified(updated, time.Now())
	httpx.DropUnprovableDates(r, updated, modified)
	if v := r.Header.Get("If-Range"); v != "" && !strings.HasPrefix(v, `"`) && !strings.HasPrefix(v, "W/") {
		r.Header.Del("If-Range") // a date that held: the media is older
	}
	c.Request = r.WithContext(context.WithValue(r.Context(), lastModifiedKey{}, modified))
	return true
}

// lastModifiedKey carries a PDF document's Last-Modified to the proxy's
// ModifyResponse.
type lastModifiedKey struct{}

func serveContent(c *gin.Context, d document.Document) {
	ctype, ext := "text/markdown; charset=utf-8", ".md"
	if d.Type == document.HTML {
		ctype, ext = "text/html; charset=utf-8", ".html"
		// Opened directly, the page runs in a sandbox: no script, no
		// same-origin access, even if sanitising ever missed something.
		c.Header("Content-Security-Policy", "sandbox")
	}
	sum := sha256.Sum256([]byte(d.Content))
	h := c.Writer.Header()
	h.Set("Content-Type", ctype)
	h.Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	h.Set("Content-Disposition", httpx.ContentDisposition("attachment", fileName(d.Title)+ext))
	h.Set("Cache-Control", documentCache)
	// A PATCH may change the content within one second: LastModified.
	lm := httpx.LastModified(d.UpdatedAt, time.Now())
	_ = httpx.ServeContent(c.Writer, c.Request, lm, int64(len(d.Content)), strings.NewReader(d.Content))
}

// documentCache: a document's file can change (PATCH) or go (DELETE), so
// clients revalidate every time; the ETag makes that cheap. The media
// service's own immutable caching does not apply to a document's URL.
const documentCache = "no-cache"

// fileName makes a file name out of a title: no path separators or control
// characters, at most 200 bytes.
func fileName(title string) string {
	name := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || strings.ContainsRune(`/\:*?"<>|`, r) {
			return '_'
		}
		return r
	}, strings.TrimSpace(title))
	for len(name) > 200 {
		_, size := lastRune(name)
		name = name[:len(name)-size]
	}
	if name == "" {
		return "document"
	}
	return name
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] < 0x80 || s[i] >= 0xC0 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}

// mediaProxy streams a media download from the media service, request and
// response headers (Range, If-None-Match, ETag, Content-Range...) untouched.
func mediaProxy(target *url.URL) http.Handler {
	if target == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			problem.Write(w, problem.Unavailable("the media service is not configured"))
		})
	}
	transport := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		ResponseHeaderTimeout: 15 * time.Second,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			path := r.In.URL.Path
			r.SetURL(target)
			r.Out.URL.Path, r.Out.URL.RawPath = path, ""
			r.Out.URL.RawQuery = ""
			r.Out.Header.Del("Cookie")
			r.Out.Header.Del("Authorization")
		},
		Transport: otelhttp.NewTransport(transport),
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode < 400 { // problems keep their no-store
				resp.Header.Set("Cache-Control", documentCache)
			}
			if t, ok := resp.Request.Context().Value(lastModifiedKey{}).(time.Time); ok && resp.Header.Get("Last-Modified") != "" {
				if t.IsZero() { // changed within this second: no date yet
					resp.Header.Del("Last-Modified")
				} else {
					resp.Header.Set("Last-Modified", t.UTC().Format(http.TimeFormat))
				}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away
			}
			problem.Write(w, problem.Unavailable("the media service is unavailable, so the file cannot be sent; try again shortly").With("Retry-After", "5"))
		},
	}
}
