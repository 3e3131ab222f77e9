package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/services/gateway/internal/auth"
	"github.com/doclib/services/gateway/internal/auth/oidctest"
)

func init() { gin.SetMode(gin.TestMode) }

func TestParseStaticTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		want    []auth.StaticToken
		wantErr []string // substrings; none means valid
	}{
		{name: "comma-separated", raw: "alice:editor:tok-alice-1,ci:viewer:tok-ci-0001",
			want: []auth.StaticToken{{"alice", identity.Editor, "tok-alice-1"}, {"ci", identity.Viewer, "tok-ci-0001"}}},
		{name: "one per line, as a Secret file", raw: "alice:editor:tok-alice-1\nci:viewer:tok-ci-0001\n\n",
			want: []auth.StaticToken{{"alice", identity.Editor, "tok-alice-1"}, {"ci", identity.Viewer, "tok-ci-0001"}}},
		{name: "base64 token with padding", raw: "svc@example.org:editor:ab/c+d~e.f_g==",
			want: []auth.StaticToken{{"svc@example.org", identity.Editor, "ab/c+d~e.f_g=="}}},
		{name: "old format without name and role", raw: "tok-alice-1", wantErr: []string{"entry 1 is not NAME:ROLE:TOKEN"}},
		{name: "unknown role", raw: "alice:admin:tok-alice-1", wantErr: []string{"entry 1 (alice): the role must be viewer or editor"}},
		{name: "role of the wrong case", raw: "alice:Editor:tok-alice-1", wantErr: []string{"role must be viewer or editor"}},
		{name: "trailing space", raw: "alice:editor:tok-alice-1 ,bob:viewer:tok-bob-0001", wantErr: []string{"entry 1 (alice): the token has spaces"}},
		{name: "leading space", raw: "alice:editor: tok-alice-1", wantErr: []string{"spaces around it"}},
		{name: "space inside", raw: "alice:editor:tok alice 1", wantErr: []string{"may hold only"}},
		{name: "too short", raw: "alice:editor:short", wantErr: []string{"shorter than 8"}},
		{name: "bad name", raw: "al ice:editor:tok-alice-1", wantErr: []string{"entry 1: the name must be"}},
		{name: "same name twice", raw: "alice:editor:tok-alice-1,alice:viewer:tok-alice-2", wantErr: []string{"entry 2 (alice): the name is used twice"}},
		{name: "same token twice", raw: "alice:editor:tok-alice-1,bob:viewer:tok-alice-1", wantErr: []string{"entry 2 (bob): the token is the same"}},
		{name: "every error named", raw: "x:y:z,tok", wantErr: []string{"entry 1 (x): the role", "entry 1 (x): the token is shorter", "entry 2 is not"}},
		{name: "empty", raw: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := auth.ParseStaticTokens(tt.raw)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d tokens, want %d", len(got), len(tt.want))
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("token %d = %+v, want %+v", i, got[i], tt.want[i])
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "tok-alice-1") {
				t.Errorf("error %q shows a token", err)
			}
		})
	}
}

func TestStatic(t *testing.T) {
	t.Parallel()
	v := auth.NewStatic([]auth.StaticToken{
		{"alice", identity.Editor, "alpha-token"}, {"bob", identity.Viewer, "beta-token"}, {"carol", identity.Editor, "gamma-token"},
	})
	tests := []struct {
		name    string
		token   string
		want    identity.Caller
		wantErr bool
	}{
		{name: "first", token: "alpha-token", want: identity.Caller{Name: "alice", Role: identity.Editor}},
		{name: "viewer", token: "beta-token", want: identity.Caller{Name: "bob", Role: identity.Viewer}},
		{name: "last", token: "gamma-token", want: identity.Caller{Name: "carol", Role: identity.Editor}},
		{name: "wrong case", token: "ALPHA-TOKEN", wantErr: true},
		{name: "prefix", token: "alpha", wantErr: true},
		{name: "longer", token: "alpha-token2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := v.Verify(context.Background(), tt.token)
			if tt.wantErr {
				var invalid *auth.Invalid
				if !errors.As(err, &invalid) {
					t.Fatalf("Verify(%q) = %v, %v; want an *Invalid", tt.token, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Verify(%q) = %+v, %v; want %+v", tt.token, got, err, tt.want)
			}
		})
	}
	if _, err := v.Verify(context.Background(), "a.b.c"); !errors.Is(err, auth.ErrNotMine) {
		t.Errorf("a JWT-shaped unknown token: %v, want ErrNotMine (the OIDC verifier may know it)", err)
	}
}

// authenticate runs a's decision for one request and returns the status
// (200 when accepted) and the accepted caller.
func authenticate(t *testing.T, a *auth.Authenticator, method, clientIP string, header ...string) (int, identity.Caller, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	c.Request = httptest.NewRequest(method, "/bo/x", nil)
	c.Request.RemoteAddr = clientIP + ":1234"
	for _, h := range header {
		c.Request.Header.Add("Authorization", h)
	}
	caller, p := a.Authenticate(c, method == "GET" || method == "HEAD" || method == "SAFE")
	if p != nil {
		if caller != (identity.Caller{}) {
			t.Errorf("a refusal names a caller: %+v", caller)
		}
		return p.Status, caller, p.Header
	}
	return http.StatusOK, caller, nil
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	a, err := auth.New(nil, auth.NewStatic([]auth.StaticToken{
		{"alice", identity.Editor, "editor-token"}, {"bob", identity.Viewer, "viewer-token"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		method  string
		headers []string
		want    int
		caller  string
	}{
		{"editor writes", "DELETE", []string{"Bearer editor-token"}, 200, "alice"},
		{"viewer reads", "GET", []string{"Bearer viewer-token"}, 200, "bob"},
		{"viewer HEAD", "HEAD", []string{"Bearer viewer-token"}, 200, "bob"},
		{"viewer writes", "POST", []string{"Bearer viewer-token"}, 403, ""},
		{"viewer patches", "PATCH", []string{"Bearer viewer-token"}, 403, ""},
		{"viewer deletes", "DELETE", []string{"Bearer viewer-token"}, 403, ""},
		{"viewer sends a safe route (the preview)", "SAFE", []string{"Bearer viewer-token"}, 200, "bob"},
		{"scheme case-insensitive", "GET", []string{"bearer editor-token"}, 200, "alice"},
		{"several spaces after the scheme", "GET", []string{"Bearer   editor-token"}, 200, "alice"},
		{"missing", "GET", nil, 401, ""},
		{"unknown token", "GET", []string{"Bearer nope-nope-nope"}, 401, ""},
		{"wrong case", "GET", []string{"Bearer EDITOR-TOKEN"}, 401, ""},
		{"no-break space after", "GET", []string{"Bearer editor-token\u00a0"}, 401, ""},
		{"space then more", "GET", []string{"Bearer editor-token x"}, 401, ""},
		{"quoted", "GET", []string{`Bearer "editor-token"`}, 401, ""},
		{"basic scheme", "GET", []string{"Basic ZWRpdG9yOg=="}, 401, ""},
		{"scheme alone", "GET", []string{"Bearer"}, 401, ""},
		{"empty token", "GET", []string{"Bearer "}, 401, ""},
		{"two headers", "GET", []string{"Bearer editor-token", "Bearer viewer-token"}, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, caller, h := authenticate(t, a, tt.method, "192.0.2.1", tt.headers...)
			if status != tt.want || caller.Name != tt.caller {
				t.Fatalf("status %d caller %q, want %d %q", status, caller.Name, tt.want, tt.caller)
			}
			if status == 401 && h.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestNewRefusesNoVerifier(t *testing.T) {
	t.Parallel()
	if _, err := auth.New(nil); err == nil {
		t.Fatal("New() without verifiers must fail so /bo is never open")
	}
}

func TestFailureLimit(t *testing.T) {
	t.Parallel()
	failures := ratelimit.New(1.0/60, 3, 100) // 3 failures, then one a minute
	a, err := auth.New(failures, auth.NewStatic([]auth.StaticToken{{"alice", identity.Editor, "editor-token"}}))
	if err != nil {
		t.Fatal(err)
	}
	const attacker, other = "192.0.2.7", "198.51.100.9"

	// Valid tokens never count, however many.
	for range 50 {
		if status, _, _ := authenticate(t, a, "GET", attacker, "Bearer editor-token"); status != 200 {
			t.Fatalf("a valid token: status %d, want 200", status)
		}
	}
	// Requests without credentials are not guesses.
	for range 10 {
		if status, _, _ := authenticate(t, a, "GET", attacker); status != 401 {
			t.Fatalf("no credentials: status %d, want 401", status)
		}
	}
	for i := range 3 {
		if status, _, _ := authenticate(t, a, "GET", attacker, "Bearer wrong-token"); status != 401 {
			t.Fatalf("failure %d: status %d, want 401", i+1, status)
		}
	}
	status, _, h := authenticate(t, a, "GET", attacker, "Bearer wrong-token")
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("failure past the budget: status %d Retry-After %q, want 429 with Retry-After", status, h.Get("Retry-After"))
	}
	// Refused failures never lock out the right token (issue 21 item 3):
	// it is checked first and served whatever the client's failure count.
	for range 5 {
		if status, _, _ := authenticate(t, a, "GET", attacker, "Bearer editor-token"); status != 200 {
			t.Errorf("a valid token from a client past its failure budget: status %d, want 200", status)
		}
		if status, _, _ := authenticate(t, a, "GET", attacker, "Bearer wrong-token"); status != http.StatusTooManyRequests {
			t.Errorf("a failure between valid tokens: status %d, want 429 (valid tokens refill nothing)", status)
		}
	}
	// Another client is not affected.
	if status, _, _ := authenticate(t, a, "GET", other, "Bearer editor-token"); status != 200 {
		t.Errorf("another client's valid token: status %d, want 200", status)
	}
	if status, _, _ := authenticate(t, a, "GET", other, "Bearer wrong-token"); status != 401 {
		t.Errorf("another client's first failure: status %d, want 401", status)
	}
}

func TestOIDC(t *testing.T) {
	t.Parallel()
	is := oidctest.New(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v := auth.NewOIDC(is.URL, "doclib-bo", "roles")
	nested := auth.NewOIDC(is.URL, "doclib-bo", "realm_access.roles")
	for _, o := range []*auth.OIDC{v, nested} {
		if err := o.Discover(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	claims := func(edit func(c map[string]any)) map[string]any {
		c := map[string]any{"iss": is.URL, "sub": "alice", "aud": "doclib-bo", "iat": now.Add(-time.Minute).Unix(),
			"exp": now.Add(time.Hour).Unix(), "roles": []string{"other-app", "editor"}}
		if edit != nil {
			edit(c)
		}
		return c
	}
	tests := []struct {
		name     string
		verifier *auth.OIDC
		token    string
		want     identity.Caller
		wantErr  string // "invalid", "norole", "notmine"
		reason   string
	}{
		{name: "editor in an array", verifier: v, token: is.Sign(is.Key, claims(nil)),
			want: identity.Caller{Name: "alice", Role: identity.Editor}},
		{name: "viewer as a string", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = "viewer" })),
			want: identity.Caller{Name: "alice", Role: identity.Viewer}},
		{name: "both: editor wins", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = []string{"viewer", "editor"} })),
			want: identity.Caller{Name: "alice", Role: identity.Editor}},
		{name: "nested claim", verifier: nested, token: is.Sign(is.Key, claims(func(c map[string]any) {
			c["realm_access"] = map[string]any{"roles": []string{"viewer"}}
		})), want: identity.Caller{Name: "alice", Role: identity.Viewer}},
		{name: "role claim missing", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { delete(c, "roles") })),
			wantErr: "norole", reason: "no roles claim"},
		{name: "role claim a number", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = 7 })),
			wantErr: "norole", reason: "string or an array of strings"},
		{name: "role claim an array with a number", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = []any{"editor", 1} })),
			wantErr: "norole", reason: "string or an array of strings"},
		{name: "role claim an object", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = map[string]any{"editor": true} })),
			wantErr: "norole", reason: "string or an array of strings"},
		{name: "no known role", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = []string{"admin"} })),
			wantErr: "norole", reason: "neither editor nor viewer"},
		{name: "role of the wrong case", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["roles"] = "Editor" })),
			wantErr: "norole", reason: "neither editor nor viewer"},
		{name: "nested claim missing", verifier: nested, token: is.Sign(is.Key, claims(nil)),
			wantErr: "norole", reason: "no realm_access.roles claim"},
		{name: "wrong audience", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["aud"] = "someone-else" })),
			wantErr: "invalid", reason: "audience"},
		{name: "expired", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })),
			wantErr: "invalid", reason: "expired"},
		{name: "another issuer", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { c["iss"] = "https://evil.example" })),
			wantErr: "invalid", reason: "not valid"},
		{name: "no subject", verifier: v, token: is.Sign(is.Key, claims(func(c map[string]any) { delete(c, "sub") })),
			wantErr: "invalid", reason: "subject"},
		{name: "signed by another key", verifier: v, token: is.Sign(other, claims(nil)), wantErr: "invalid", reason: "not valid"},
		{name: "not a JWT", verifier: v, token: "dev-token", wantErr: "notmine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.verifier.Verify(context.Background(), tt.token)
			var invalid *auth.Invalid
			var noRole *auth.NoRole
			switch tt.wantErr {
			case "":
				if err != nil || got != tt.want {
					t.Fatalf("Verify = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			case "invalid":
				if !errors.As(err, &invalid) {
					t.Fatalf("Verify = %+v, %v; want an *Invalid (401)", got, err)
				}
			case "norole":
				if !errors.As(err, &noRole) {
					t.Fatalf("Verify = %+v, %v; want a *NoRole (403)", got, err)
				}
			case "notmine":
				if !errors.Is(err, auth.ErrNotMine) {
					t.Fatalf("Verify = %+v, %v; want ErrNotMine", got, err)
				}
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("reason %q does not say %q", err, tt.reason)
			}
		})
	}
}

// TestOIDCAndStaticTogether checks the order: a static token is found
// first, a JWT goes on to the issuer, and a JWT without role is a 403.
func TestOIDCAndStaticTogether(t *testing.T) {
	t.Parallel()
	is, o := discovered(t)
	a, err := auth.New(nil, auth.NewStatic([]auth.StaticToken{{"ci", identity.Viewer, "ci-token-0001"}}), o)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	base := map[string]any{"iss": is.URL, "sub": "alice", "aud": "doclib-bo", "exp": now.Add(time.Hour).Unix()}
	withRole := map[string]any{"roles": "editor"}
	for k, v := range base {
		withRole[k] = v
	}
	if status, c, _ := authenticate(t, a, "POST", "192.0.2.1", "Bearer "+is.Sign(is.Key, withRole)); status != 200 || c.Name != "alice" || c.Role != identity.Editor {
		t.Errorf("JWT editor: %d %+v", status, c)
	}
	if status, c, _ := authenticate(t, a, "GET", "192.0.2.1", "Bearer ci-token-0001"); status != 200 || c.Name != "ci" {
		t.Errorf("static viewer: %d %+v", status, c)
	}
	if status, _, _ := authenticate(t, a, "GET", "192.0.2.1", "Bearer "+is.Sign(is.Key, base)); status != http.StatusForbidden {
		t.Errorf("JWT without role: %d, want 403", status)
	}
}

// TestOIDCIssuerReachedLate: an issuer that cannot be reached yet keeps
// nothing else from working. Static tokens pass; a JWT is 503 with
// Retry-After (the token may be valid: no 401, and no failed attempt
// counted); once the issuer answers, discovery succeeds and the JWT is
// accepted.
func TestOIDCIssuerReachedLate(t *testing.T) {
	t.Parallel()
	is := oidctest.Unstarted(t)
	o := auth.NewOIDC(is.URL, "doclib-bo", "roles")
	failures := ratelimit.New(1.0/60, 1, ratelimit.DefaultMaxClients) // one failure per minute
	a, err := auth.New(failures, auth.NewStatic([]auth.StaticToken{{"ci", identity.Viewer, "ci-token-0001"}}), o)
	if err != nil {
		t.Fatal(err)
	}
	jwt := "Bearer " + is.Sign(is.Key, map[string]any{"iss": is.URL, "sub": "alice", "aud": "doclib-bo",
		"exp": time.Now().Add(time.Hour).Unix(), "roles": "editor"})

	if err := o.Discover(context.Background()); err == nil {
		t.Fatal("discovery succeeded with nothing listening at the issuer's address")
	}
	for range 3 {
		status, _, h := authenticate(t, a, "GET", "192.0.2.1", jwt)
		if status != http.StatusServiceUnavailable || h.Get("Retry-After") != "10" {
			t.Fatalf("a JWT while the issuer is unknown: %d, Retry-After %q; want 503 with Retry-After: 10", status, h.Get("Retry-After"))
		}
	}
	if status, c, _ := authenticate(t, a, "GET", "192.0.2.1", "Bearer ci-token-0001"); status != 200 || c.Name != "ci" {
		t.Errorf("a static token while the issuer is unknown: %d %+v, want it accepted", status, c)
	}

	is.Start()
	if err := o.Discover(context.Background()); err != nil {
		t.Fatalf("discovery once the issuer answers: %v", err)
	}
	if status, c, _ := authenticate(t, a, "POST", "192.0.2.1", jwt); status != 200 || c.Name != "alice" || c.Role != identity.Editor {
		t.Errorf("the JWT once the issuer is known: %d %+v, want alice, editor (the 503s counted as no failed authentication)", status, c)
	}
}

// TestOIDCKeysUnreachable: a JWT whose keys cannot be fetched (the
// issuer's JWKS endpoint fails) is 503 with Retry-After, not 401: the
// console ends a session on a 401, so one short JWKS outage would sign
// out every OIDC user. It is no failed authentication either.
func TestOIDCKeysUnreachable(t *testing.T) {
	t.Parallel()
	is, o := discovered(t)
	failures := ratelimit.New(1.0/60, 1, ratelimit.DefaultMaxClients) // one failure per minute
	a, err := auth.New(failures, o)
	if err != nil {
		t.Fatal(err)
	}
	jwt := "Bearer " + is.Sign(is.Key, map[string]any{"iss": is.URL, "sub": "alice", "aud": "doclib-bo",
		"exp": time.Now().Add(time.Hour).Unix(), "roles": "editor"})

	is.KeysDown.Store(true)
	for range 3 {
		status, _, h := authenticate(t, a, "GET", "192.0.2.1", jwt)
		if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Fatalf("a JWT whose keys cannot be fetched: %d, Retry-After %q; want 503 with Retry-After", status, h.Get("Retry-After"))
		}
	}
	is.KeysDown.Store(false)
	if status, c, _ := authenticate(t, a, "GET", "192.0.2.1", jwt); status != 200 || c.Name != "alice" {
		t.Errorf("the JWT once the keys answer: %d %+v, want alice (the 503s counted as no failed authentication)", status, c)
	}
}

// TestOIDCKeysKeptThroughAnOutage: once the gateway has discovered the
// issuer and fetched its keys, JWTs signed with them keep working while
// the identity provider is down (docs/platform.md, "When a part is down").
func TestOIDCKeysKeptThroughAnOutage(t *testing.T) {
	t.Parallel()
	is, o := discovered(t)
	token := func(sub string) string {
		return is.Sign(is.Key, map[string]any{"iss": is.URL, "sub": sub, "aud": "doclib-bo",
			"exp": time.Now().Add(time.Hour).Unix(), "roles": "editor"})
	}
	if _, err := o.Verify(context.Background(), token("alice")); err != nil {
		t.Fatalf("a JWT while the issuer answers: %v", err)
	}
	is.Stop()
	for _, sub := range []string{"alice", "bob"} { // the same token's claims, and a new token
		if c, err := o.Verify(context.Background(), token(sub)); err != nil || c.Name != sub {
			t.Errorf("a JWT signed with a fetched key, the issuer down: %+v, %v; want it accepted", c, err)
		}
	}
}

// discovered is a serving issuer and a verifier that discovered it.
func discovered(t *testing.T) (*oidctest.Issuer, *auth.OIDC) {
	t.Helper()
	is := oidctest.New(t)
	o := auth.NewOIDC(is.URL, "doclib-bo", "roles")
	if err := o.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return is, o
}
