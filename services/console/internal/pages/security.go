package pages

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// csp allows the console's own script, style and images only, no inline
// script or style, no plugin, no framing of the console. The script may
// call the console only (connect-src: the live preview, uploads with
// progress). Frames (the sandboxed previews) are srcdoc documents, which
// frame-src 'none' does not stop and which inherit this policy: their
// images may be data: ones, nothing else from outside loads in them, and
// a link in them loads nothing (with 'self' a relative link showed the
// console's own answers in the frame).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-src 'none'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// Headers sets the security headers of every console answer; pages carry
// a person's data, so nothing is cached.
func Headers(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	c.Next()
}

// CrossOrigin refuses state-changing requests from other origins (Go's
// http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host).
// trusted are the origins the console is reached at through a proxy that
// changes Host (the gateway's admin listener).
func CrossOrigin(h http.Handler, trusted []string) (http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range trusted {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, err
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Security-Policy", csp)
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("Refused: this form was sent from another site. Nothing was changed.\n"))
	}))
	return cop.Handler(h), nil
}

// LimitBody caps request bodies at n bytes: a larger form is refused by
// the form parser, and the page says the file is too large.
func LimitBody(n int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
		}
		c.Next()
	}
}
