package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
)

// TestEdgeListenersAndRoles drives the edge of CONTRACT.md §5 and §7
// through the real gateway and services: two listeners, 401 before 404 and
// 405, roles, and services that trust only the gateway.
func TestEdgeListenersAndRoles(t *testing.T) {
	st := NewStack(t, nil)
	viewer := []string{"Authorization", "Bearer " + ViewerToken}
	editor := []string{"Authorization", "Bearer " + Token}
	get := func(base, method, path string, headers ...string) Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return do(t, req)
	}

	t.Run("the public listener has no /bo", func(t *testing.T) {
		for _, path := range []string{"/bo/tags-categories", "/bo/documents", "/bo/nope"} {
			r := get(st.URL, "GET", path, editor...)
			if r.Status != 404 || r.Problem(t).Code != "not_found" {
				t.Errorf("public GET %s with a token: %d %s, want 404 not_found", path, r.Status, r.Body)
			}
		}
		for _, base := range []string{st.URL, st.AdminURL} {
			if r := get(base, "GET", "/public/tags-categories"); r.Status != 200 {
				t.Errorf("%s/public/tags-categories: %d", base, r.Status)
			}
		}
	})

	t.Run("401 before 404 and 405", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{{"GET", "/bo/nope"}, {"PUT", "/bo/tags/x"}, {"DELETE", "/bo"}} {
			r := get(st.AdminURL, c.method, c.path)
			if r.Status != 401 || r.Problem(t).Code != "unauthorized" || r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s without a token: %d, want 401 with WWW-Authenticate", c.method, c.path, r.Status)
			}
		}
		if r := get(st.AdminURL, "PUT", "/bo/tags/x", editor...); r.Status != 405 || !strings.Contains(r.Header.Get("Allow"), "PATCH") {
			t.Errorf("PUT /bo/tags/x as editor: %d Allow %q, want 405 listing PATCH", r.Status, r.Header.Get("Allow"))
		}
	})

	t.Run("bad credentials", func(t *testing.T) {
		for _, auth := range []string{"Bearer " + strings.ToUpper(Token), "Bearer " + Token + "\u00a0", "Bearer " + Token + " x",
			"Bearer not.a.jwt", "Token " + Token, "Bearer"} {
			r := st.Req("GET", "/bo/tags-categories", nil, "Authorization", auth)
			if r.Status != 401 || r.Problem(t).Code != "unauthorized" {
				t.Errorf("Authorization %q: %d %s, want 401", auth, r.Status, r.Body)
			}
		}
	})

	t.Run("a viewer reads and cannot write", func(t *testing.T) {
		st.Must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
		if r := st.Req("GET", "/bo/tags-categories", nil, viewer...); r.Status != 200 {
			t.Fatalf("viewer GET: %d %s", r.Status, r.Body)
		}
		writes := []struct{ method, path, body string }{
			{"POST", "/bo/tags-categories", `{"id":"other","name":"Other"}`},
			{"PATCH", "/bo/tags-categories/health", `{"name":"Changed"}`},
			{"DELETE", "/bo/tags-categories/health", ""},
			{"POST", "/bo/documents", `{"type":"LINK","title":"T","url":"https://example.org"}`},
		}
		for _, w := range writes {
			var body any
			if w.body != "" {
				body = w.body
			}
			r := st.Req(w.method, w.path, body, viewer...)
			if r.Status != 403 || r.Problem(t).Code != "forbidden" {
				t.Errorf("viewer %s %s: %d %s, want 403 forbidden", w.method, w.path, r.Status, r.Body)
			}
		}
		// A client-made identity header changes nothing.
		forged := proof.NewSigner([]byte("made-up-key-0123456789abcdef0123456")).Sign("DELETE", "/bo/tags-categories/health",
			identity.Caller{Name: "mallory", Role: identity.Editor})
		r := st.Req("DELETE", "/bo/tags-categories/health", nil, "Authorization", "Bearer "+ViewerToken, proof.Header, forged)
		if r.Status != 403 {
			t.Errorf("viewer with a forged identity header: %d, want 403", r.Status)
		}
		r = st.Req("DELETE", "/bo/tags-categories/health", nil, proof.Header, forged)
		if r.Status != 401 {
			t.Errorf("a forged identity header alone: %d, want 401", r.Status)
		}
		pub := st.Req("GET", "/public/tags-categories", nil)
		if string(pub.Body) != `[{"id":"health","name":"Santé","tags":[]}]` {
			t.Errorf("after the refused writes the categories are %s, want only health, unchanged", pub.Body)
		}
	})

	t.Run("CORS", func(t *testing.T) {
		pre := get(st.AdminURL, "OPTIONS", "/bo/documents", "Origin", BackOfficeOrigin,
			"Access-Control-Request-Method", "PATCH", "Access-Control-Request-Headers", "authorization,content-type,if-none-match")
		if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != BackOfficeOrigin ||
			!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") || pre.Header.Get("Access-Control-Max-Age") == "" {
			t.Errorf("admin preflight: %d %v", pre.Status, pre.Header)
		}
		bad := get(st.AdminURL, "OPTIONS", "/bo/documents", "Origin", "https://evil.example", "Access-Control-Request-Method", "DELETE")
		if bad.Status != 403 || bad.Problem(t).Code != "forbidden" || bad.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from another origin: %d %v", bad.Status, bad.Header)
		}
		r := get(st.AdminURL, "GET", "/bo/documents", "Origin", BackOfficeOrigin, "Authorization", "Bearer "+Token)
		if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != BackOfficeOrigin ||
			!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "ETag") {
			t.Errorf("admin GET from the back-office origin: %d %v", r.Status, r.Header)
		}
		r = get(st.URL, "GET", "/public/tags-categories", "Origin", "https://anything.example")
		if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("public GET from any origin: %d %v", r.Status, r.Header)
		}
	})

	t.Run("public config", func(t *testing.T) {
		r := st.Req("GET", "/public/config", nil)
		if r.Status != 200 || string(r.Body) != `{"moderatorEmail":"`+ModeratorEmail+`"}` {
			t.Fatalf("GET /public/config before any PUT: %d %s", r.Status, r.Body)
		}
		for _, bad := range []string{`{"moderatorEmail":"not-an-email"}`, `{"moderatorEmail":"Mod <mod@example.org>"}`, `{}`} {
			r := st.BO("PUT", "/bo/config", bad)
			if r.Status != 422 || r.Problem(t).Fields() != "moderatorEmail" {
				t.Errorf("PUT %s: %d %s, want 422 naming moderatorEmail", bad, r.Status, r.Body)
			}
		}
		if r := st.Req("PUT", "/bo/config", `{"moderatorEmail":"x@example.org"}`, viewer...); r.Status != 403 {
			t.Errorf("a viewer's PUT: %d, want 403", r.Status)
		}
		if r := st.Req("PUT", "/bo/config", `{"moderatorEmail":"x@example.org"}`, editor...); r.Status != 200 ||
			!strings.Contains(string(r.Body), `"updatedBy":"`+TokenName+`"`) {
			t.Errorf("an editor's PUT: %d %s", r.Status, r.Body)
		}
		// The author sees it at once through the gateway (its micro-cache
		// revalidates after a back-office write).
		if r := st.Req("GET", "/public/config", nil); string(r.Body) != `{"moderatorEmail":"x@example.org"}` {
			t.Errorf("GET /public/config after the PUT: %s", r.Body)
		}
	})

	t.Run("media records who uploaded them", func(t *testing.T) {
		id := st.Upload("guide.pdf", []byte("%PDF-1.4\n%edge test\n"))
		var list []struct{ ID, CreatedBy, UpdatedBy string }
		st.Must("GET", "/bo/medias", nil, 200).JSON(t, &list)
		if len(list) != 1 || list[0].ID != id || list[0].CreatedBy != TokenName || list[0].UpdatedBy != TokenName {
			t.Errorf("GET /bo/medias = %+v, want %s with createdBy and updatedBy %q", list, id, TokenName)
		}
	})

	t.Run("services answer /bo only to the gateway", func(t *testing.T) {
		for _, svc := range []string{"taxonomy", "catalog", "media"} {
			path := map[string]string{"taxonomy": "/bo/tags-categories", "catalog": "/bo/documents", "media": "/bo/medias"}[svc]
			base := st.ServiceURL(svc)
			for name, headers := range map[string][]string{
				"nothing":            nil,
				"a bearer token":     editor,
				"a forged signature": {proof.Header, proof.NewSigner([]byte("made-up-key-0123456789abcdef0123456")).Sign("GET", path, identity.Caller{Name: "x", Role: identity.Editor})},
				"another request's":  {proof.Header, proof.NewSigner([]byte(IdentityKey)).Sign("GET", "/bo/other", identity.Caller{Name: "x", Role: identity.Editor})},
			} {
				r := get(base, "GET", path, headers...)
				if r.Status != 401 || r.Problem(t).Code != "unauthorized" {
					t.Errorf("%s GET %s with %s: %d %s, want 401", svc, path, name, r.Status, r.Body)
				}
			}
			if r := get(base, "GET", "/bo/nope"); r.Status != 401 {
				t.Errorf("%s GET /bo/nope unsigned: %d, want 401", svc, r.Status)
			}
			req, _ := http.NewRequest("GET", base+path, nil)
			SignAsGateway(req)
			if r := do(t, req); r.Status != 200 {
				t.Errorf("%s GET %s signed as the gateway: %d %s", svc, path, r.Status, r.Body)
			}
		}
	})
}

// do sends req and reads the answer whole.
func do(t testing.TB, req *http.Request) Response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, res.Body); err != nil {
		t.Fatal(err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: []byte(b.String())}
}
