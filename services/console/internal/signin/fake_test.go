package signin

import (
	"cmp"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// fakeProvider is an OpenID provider for unit tests: discovery, keys and
// a token endpoint that answers any code with an ID token whose claims
// the test chooses, and remembers the code_verifier it was sent.
type fakeProvider struct {
	*httptest.Server
	key *rsa.PrivateKey

	mu       sync.Mutex
	claims   map[string]any // the next ID token's, beyond iss and exp
	noID     bool           // answer without an ID token
	access   string         // the access token given ("" : an opaque one)
	keysDown bool           // the keys answer 503
	verifier string         // the last code_verifier received
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeProvider{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"issuer": f.URL, "jwks_uri": f.URL + "/keys",
			"authorization_endpoint": f.URL + "/auth", "token_endpoint": f.URL + "/token",
			"end_session_endpoint": f.URL + "/end", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		down := f.keysDown
		f.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/token", f.token)
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verifier = r.PostForm.Get("code_verifier")
	answer := map[string]any{"access_token": cmp.Or(f.access, "opaque"), "token_type": "Bearer", "expires_in": 300}
	if !f.noID {
		claims := map[string]any{"iss": f.URL, "exp": time.Now().Add(time.Hour).Unix()}
		for k, v := range f.claims {
			claims[k] = v
		}
		answer["id_token"] = f.sign(claims)
	}
	writeJSON(w, answer)
}

// sign returns claims as a JWT signed with the provider's key.
func (f *fakeProvider) sign(claims map[string]any) string {
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: f.key, KeyID: "k"}}, nil)
	raw, _ := jwt.Signed(signer).Claims(claims).Serialize()
	return raw
}

// answer sets what the token endpoint answers next.
func (f *fakeProvider) answer(claims map[string]any, access string, noID bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims, f.access, f.noID = claims, access, noID
}

// lastVerifier is the code_verifier the token endpoint last received.
func (f *fakeProvider) lastVerifier() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifier
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
