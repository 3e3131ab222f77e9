package process

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Against real FerretDB and NATS: the process opens both, reports them in
// its readiness, and Close releases them (NATS drained).
func TestStartOpenNATSHealthClose(t *testing.T) {
	ctx := context.Background()
	env := config.FromMap(map[string]string{"MONGODB_URI": testkit.MongoURI(t)})
	p, err := Start(ctx, "test", env, "error", testkit.MongoURI(t))
	testkit.Must(t, err, "start")
	testkit.Must(t, p.OpenNATS(ctx, testkit.NATS(t).ClientURL()), "open NATS")

	e := gin.New()
	p.Health(map[string]httpx.Check{"extra": func(context.Context) error { return nil }}).Register(e)
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	for _, name := range []string{"mongodb", "nats", "extra"} {
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), name) {
			t.Errorf("readyz: %d %s; want 200 naming %s", w.Code, w.Body, name)
		}
	}

	nc := p.NATS
	p.Close()
	if !nc.IsClosed() && !nc.IsDraining() {
		t.Error("NATS connection still open after Close")
	}
	p.Close() // a second Close does nothing
}
