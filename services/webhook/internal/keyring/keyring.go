// Package keyring seals webhook signing secrets for storage and opens them
// again, with keys the deployment provides (WEBHOOK_SECRET_KEY, and the
// others it still opens during a rotation): a copy of the database alone
// does not let anyone sign webhooks as the library.
//
// AES-256-GCM from the standard library. Each key given is a string of at
// least MinKeyLength bytes (openssl rand -base64 32); HKDF-SHA256 derives
// the AES key and a short key id from it, so a sealed value names the key
// that opens it. A sealed value is bound to where it is stored (the
// subscription and the field): moved to another subscription, it does not
// open.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// MinKeyLength is the shortest key accepted, in bytes.
const MinKeyLength = 32

// prefix starts every sealed value: the format's version.
const prefix = "v1."

// ErrUnknownKey is a sealed value whose key the keyring does not hold.
var ErrUnknownKey = errors.New("sealed with a key this keyring does not hold")

type key struct {
	id   string
	aead cipher.AEAD
}

// Keyring seals with its current key and opens with any of its keys.
type Keyring struct {
	current key
	byID    map[string]key
}

// New returns a keyring sealing with current and opening with current and
// others.
func New(current string, others ...string) (*Keyring, error) {
	c, err := derive(current)
	if err != nil {
		return nil, err
	}
	k := &Keyring{current: c, byID: map[string]key{c.id: c}}
	for _, o := range others {
		d, err := derive(o)
		if err != nil {
			return nil, err
		}
		k.byID[d.id] = d
	}
	return k, nil
}

func derive(secret string) (key, error) {
	if len(secret) < MinKeyLength {
		return key{}, fmt.Errorf("a key must be at least %d bytes (e.g. openssl rand -base64 32)", MinKeyLength)
	}
	aesKey, err := hkdf.Key(sha256.New, []byte(secret), nil, "doclib webhook secrets v1", 32)
	if err != nil {
		return key{}, err
	}
	id, err := hkdf.Key(sha256.New, []byte(secret), nil, "doclib webhook secrets v1 key id", 4)
	if err != nil {
		return key{}, err
	}
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		return key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, err
	}
	return key{id: hex.EncodeToString(id), aead: aead}, nil
}

// CurrentID is the id of the key that seals.
func (k *Keyring) CurrentID() string { return k.current.id }

// Holds reports whether the keyring opens what the key id sealed.
func (k *Keyring) Holds(id string) bool { _, ok := k.byID[id]; return ok }

// Seal returns plain sealed with the current key, bound to where (the
// record and field it is stored in): "v1.<key id>.<base64url of nonce and
// ciphertext>". Its nonce is random, so sealing twice gives two values.
func (k *Keyring) Seal(plain, where string) string {
	nonce := make([]byte, k.current.aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	out := k.current.aead.Seal(nonce, nonce, []byte(plain), []byte(where))
	return prefix + k.current.id + "." + base64.RawURLEncoding.EncodeToString(out)
}

// Open returns what Seal sealed with where; ErrUnknownKey when none of
// the keyring's keys sealed it.
func (k *Keyring) Open(sealed, where string) (string, error) {
	id, err := KeyID(sealed)
	if err != nil {
		return "", err
	}
	kk, ok := k.byID[id]
	if !ok {
		return "", fmt.Errorf("%w (key id %s)", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sealed[len(prefix)+len(id)+1:])
	if err != nil || len(raw) < kk.aead.NonceSize() {
		return "", errors.New("a sealed secret is malformed")
	}
	plain, err := kk.aead.Open(nil, raw[:kk.aead.NonceSize()], raw[kk.aead.NonceSize():], []byte(where))
	if err != nil {
		return "", errors.New("a sealed secret does not open: altered, or moved from another record")
	}
	return string(plain), nil
}

// KeyID returns the id of the key sealed names.
func KeyID(sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	id, _, found := strings.Cut(rest, ".")
	if !ok || !found || id == "" {
		return "", errors.New("not a sealed secret")
	}
	return id, nil
}
