package signin

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
)

// sealer seals attempts with AES-256-GCM under a key made when the
// process starts, or derived from the session key (UseKey), which every
// replica shares: a callback reaching another replica then finishes the
// sign-in too.
type sealer struct{ aead cipher.AEAD }

// sealContext binds a sealed value to its use.
var sealContext = []byte("doclib console sign-in attempt")

func newSealer() *sealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return sealerOf(key)
}

// sealerOf is the sealer of a 32-byte key.
func sealerOf(key []byte) *sealer {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &sealer{aead: aead}
}

func (s *sealer) seal(a attempt) (string, error) {
	plain, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, sealContext)), nil
}

// open returns the attempt sealed holds; false when it was not sealed by
// this process or was changed.
func (s *sealer) open(sealed string) (attempt, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return attempt{}, false
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], sealContext)
	var a attempt
	if err != nil || json.Unmarshal(plain, &a) != nil {
		return attempt{}, false
	}
	return a, true
}

// CookieSuffix names the cookie of the attempt with this state: one
// cookie per attempt, so two tabs signing in keep theirs, and a callback
// naming another state leaves a sign-in in progress alone.
func CookieSuffix(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:8])
}

// UseKey seals the sign-in attempts with a key derived from key (the
// session key every replica has), so that any replica finishes a sign-in
// another one started.
func (p *Provider) UseKey(key []byte) {
	sum := sha256.Sum256(append([]byte("doclib console sign-in attempt key\x00"), key...))
	p.seal = sealerOf(sum[:])
}
