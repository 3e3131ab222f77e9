package proof

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
)

var key = []byte("test-key-0123456789abcdef0123456789")

func TestSignVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := NewSigner(key)
	s.now = func() time.Time { return now }
	v := NewVerifier(key)
	v.now = func() time.Time { return now }
	alice := identity.Caller{Name: "alice@example.org", Role: identity.Editor}
	good := s.Sign("DELETE", "/bo/medias/m1", alice)

	tamper := func(i int, to string) string {
		p := strings.Split(good, ".")
		p[i] = to
		return strings.Join(p, ".")
	}
	tests := []struct {
		name         string
		method, path string
		value        string
		skew         time.Duration
		want         error
	}{
		{name: "valid", method: "DELETE", path: "/bo/medias/m1", value: good},
		{name: "a minute late", method: "DELETE", path: "/bo/medias/m1", value: good, skew: Window},
		{name: "too late", method: "DELETE", path: "/bo/medias/m1", value: good, skew: Window + time.Second, want: ErrStale},
		{name: "from the future", method: "DELETE", path: "/bo/medias/m1", value: good, skew: -Window - time.Second, want: ErrStale},
		{name: "missing", method: "DELETE", path: "/bo/medias/m1", value: "", want: ErrMissing},
		{name: "another method", method: "POST", path: "/bo/medias/m1", value: good, want: ErrInvalid},
		{name: "another path", method: "DELETE", path: "/bo/medias/m2", value: good, want: ErrInvalid},
		{name: "another role", method: "DELETE", path: "/bo/medias/m1", value: tamper(2, "viewer"), want: ErrInvalid},
		{name: "another name", method: "DELETE", path: "/bo/medias/m1", value: tamper(3, "bWFsbG9yeQ"), want: ErrInvalid},
		{name: "another time", method: "DELETE", path: "/bo/medias/m1", value: tamper(1, "1800000001"), want: ErrInvalid},
		{name: "another version", method: "DELETE", path: "/bo/medias/m1", value: tamper(0, "v2"), want: ErrInvalid},
		{name: "garbage", method: "DELETE", path: "/bo/medias/m1", value: "editor", want: ErrInvalid},
		{name: "signed with another key", method: "DELETE", path: "/bo/medias/m1",
			value: NewSigner([]byte("another-key-0123456789abcdef012345")).Sign("DELETE", "/bo/medias/m1", alice), want: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := NewVerifier(key)
			v.now = func() time.Time { return now.Add(tt.skew) }
			got, err := v.Verify(tt.method, tt.path, tt.value)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %+v, %v; want %v", got, err, tt.want)
			}
			if tt.want == nil && got != alice {
				t.Errorf("caller = %+v, want %+v", got, alice)
			}
		})
	}
	t.Run("HEAD is signed as GET", func(t *testing.T) {
		t.Parallel()
		if _, err := v.Verify("HEAD", "/bo/documents", s.Sign("GET", "/bo/documents", alice)); err != nil {
			t.Errorf("a GET signature on a HEAD: %v", err)
		}
	})
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	e := httpx.NewEngine("test", slog.New(slog.DiscardHandler))
	e.Use(Middleware(NewVerifier(key), func(r *http.Request) bool { return r.URL.Path == "/bo/things/preview" }))
	seen := ""
	handler := func(c *gin.Context) {
		seen = identity.Name(c.Request.Context())
		c.Status(http.StatusNoContent)
	}
	e.GET("/bo/things", handler)
	e.DELETE("/bo/things/:id", handler)
	e.POST("/bo/things/preview", handler)
	e.GET("/public/things", handler)
	s := NewSigner(key)

	tests := []struct {
		name         string
		method, path string
		caller       *identity.Caller // nil: no header
		signedFor    string           // path the header was signed for, if not path
		want         int
		wantName     string
	}{
		{name: "editor", method: "DELETE", path: "/bo/things/t1", caller: &identity.Caller{Name: "alice", Role: identity.Editor}, want: 204, wantName: "alice"},
		{name: "viewer reads", method: "GET", path: "/bo/things", caller: &identity.Caller{Name: "carol", Role: identity.Viewer}, want: 204, wantName: "carol"},
		{name: "viewer writes", method: "DELETE", path: "/bo/things/t1", caller: &identity.Caller{Name: "carol", Role: identity.Viewer}, want: 403},
		{name: "viewer sends a safe POST", method: "POST", path: "/bo/things/preview", caller: &identity.Caller{Name: "carol", Role: identity.Viewer}, want: 204, wantName: "carol"},
		{name: "no header", method: "GET", path: "/bo/things", want: 401},
		{name: "no header, unknown path", method: "GET", path: "/bo/nope", want: 401},
		{name: "no header, unknown method", method: "PUT", path: "/bo/things", want: 401},
		{name: "header of another request", method: "DELETE", path: "/bo/things/t2", caller: &identity.Caller{Name: "alice", Role: identity.Editor},
			signedFor: "/bo/things/t1", want: 401},
		{name: "signed, unknown path", method: "GET", path: "/bo/nope", caller: &identity.Caller{Name: "alice", Role: identity.Editor}, want: 404},
		{name: "public needs nothing", method: "GET", path: "/public/things", want: 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = ""
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.caller != nil {
				p := tt.path
				if tt.signedFor != "" {
					p = tt.signedFor
				}
				req.Header.Set(Header, s.Sign(tt.method, p, *tt.caller))
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tt.want, rec.Body)
			}
			if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("Content-Type %q, want a problem", rec.Header().Get("Content-Type"))
			}
			if rec.Code == 401 && rec.Header().Get("Allow") != "" {
				t.Errorf("a 401 lists Allow %q", rec.Header().Get("Allow"))
			}
			if seen != tt.wantName {
				t.Errorf("the handler saw caller %q, want %q", seen, tt.wantName)
			}
		})
	}
}
