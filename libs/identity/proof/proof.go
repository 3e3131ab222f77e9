// Package proof is how the services know that a back-office request comes
// from the gateway, and from whom: the gateway signs the caller it
// authenticated into one header (HMAC-SHA256 with a key the gateway and the
// services share), bound to the request's method and path and to the
// minute; each service checks it on every /bo path, before routing, and
// puts the caller into the request's context (identity.From).
//
// Why a signed header rather than a shared secret sent as is, or mTLS: the
// key never crosses the network, so a header read from a log or a captured
// request cannot be turned into another identity, another method or path,
// or reused after a minute; and it needs no certificate authority or
// rotation machinery, only one Secret, while mTLS would still need a header
// to say who the caller is.
package proof

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/identity"
)

// Header carries the signed caller from the gateway to a service. The
// gateway removes any copy a client sends.
const Header = "X-Doclib-Caller"

// KeyVariable is the environment variable holding the shared key, the same
// in the gateway and every service.
const KeyVariable = "IDENTITY_SIGNING_KEY"

// MinKeyLength is the shortest key accepted, in bytes.
const MinKeyLength = 32

// Window is how far a signature's time may be from the verifier's clock,
// either way (clock skew between nodes, plus the time a request spends in
// the gateway before its headers reach the service).
const Window = time.Minute

// LoadKey reads the shared key (KeyVariable), required, masked in the
// logs, at least MinKeyLength bytes.
func LoadKey(env *config.Env) []byte {
	key := env.Secret(KeyVariable)
	if key != "" && len(key) < MinKeyLength {
		env.Check(KeyVariable, fmt.Errorf("must be at least %d bytes (e.g. openssl rand -base64 32)", MinKeyLength))
	}
	return []byte(key)
}

const version = "v1"

// Signer makes the header for a request the gateway forwards.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a Signer with key.
func NewSigner(key []byte) *Signer { return &Signer{key: key, now: time.Now} }

// Sign returns the header value naming c for a request of method on path
// (the path as forwarded, URL-escaped).
func (s *Signer) Sign(method, path string, c identity.Caller) string {
	ts := strconv.FormatInt(s.now().Unix(), 10)
	name := base64.RawURLEncoding.EncodeToString([]byte(c.Name))
	mac := sum(s.key, method, path, ts, string(c.Role), name)
	return version + "." + ts + "." + string(c.Role) + "." + name + "." + mac
}

// SignRequest sets the header of r for c (tests of the services use it to
// call /bo as the gateway would).
func (s *Signer) SignRequest(r *http.Request, c identity.Caller) {
	r.Header.Set(Header, s.Sign(r.Method, r.URL.EscapedPath(), c))
}

// Verifier checks the header on a service.
type Verifier struct {
	key []byte
	now func() time.Time
}

// NewVerifier returns a Verifier with key.
func NewVerifier(key []byte) *Verifier { return &Verifier{key: key, now: time.Now} }

// Errors of Verify; each is a 401 on the service.
var (
	ErrMissing = errors.New("the request did not come through the gateway (no " + Header + " header)")
	ErrInvalid = errors.New("the " + Header + " header is not a valid signature of the gateway")
	ErrStale   = errors.New("the " + Header + " header was signed too long ago, or the clocks of the gateway and this service differ")
)

// Verify returns the caller value names for a request of method on path.
func (v *Verifier) Verify(method, path, value string) (identity.Caller, error) {
	if value == "" {
		return identity.Caller{}, ErrMissing
	}
	parts := strings.Split(value, ".")
	if len(parts) != 5 || parts[0] != version {
		return identity.Caller{}, ErrInvalid
	}
	ts, role, name, mac := parts[1], parts[2], parts[3], parts[4]
	if !hmac.Equal([]byte(mac), []byte(sum(v.key, method, path, ts, role, name))) {
		return identity.Caller{}, ErrInvalid
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return identity.Caller{}, ErrInvalid
	}
	if d := v.now().Sub(time.Unix(sec, 0)); d > Window || d < -Window {
		return identity.Caller{}, ErrStale
	}
	raw, err := base64.RawURLEncoding.DecodeString(name)
	if err != nil || len(raw) == 0 || !identity.Role(role).Valid() {
		return identity.Caller{}, ErrInvalid
	}
	return identity.Caller{Name: string(raw), Role: identity.Role(role)}, nil
}

// sum is the signature of one request. HEAD is signed as GET, so a HEAD
// the gateway turns into a GET (or the reverse) still verifies.
func sum(key []byte, method, path, ts, role, name string) string {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	m := hmac.New(sha256.New, key)
	for _, s := range []string{version, method, path, ts, role, name} {
		m.Write([]byte(s))
		m.Write([]byte{'\n'})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
