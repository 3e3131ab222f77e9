package httpx

import "github.com/gin-gonic/gin"

// GET registers handlers for GET and for HEAD on path: every GET route
// answers HEAD with the same status and headers and no body (CONTRACT.md
// §7), and Gin's 405 lists both in Allow. The handlers need not know: net/http
// drops whatever a handler writes to a HEAD request, and rendering.Serve
// and ServeContent write no body for it.
func GET(r gin.IRoutes, path string, handlers ...gin.HandlerFunc) {
	r.GET(path, handlers...)
	r.HEAD(path, handlers...)
}
