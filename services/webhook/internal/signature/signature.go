// Package signature owns the Standard Webhooks signing scheme
// (https://www.standardwebhooks.com): the whsec_ secrets and the v1
// signature, an HMAC-SHA256 over "id.timestamp.body" with the secret's
// decoded bytes, written in base64.
package signature

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every secret.
const Prefix = "whsec_"

// secretBytes is the key length: 32 bytes, as the specification recommends
// (between 24 and 64).
const secretBytes = 32

// NewSecret returns a fresh random secret.
func NewSecret() string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:])
	return Prefix + base64.StdEncoding.EncodeToString(b[:])
}

// ErrSecret is a secret that is not whsec_ and base64.
var ErrSecret = errors.New("malformed webhook secret")

// Sign returns the signature header value for the message id sent at ts
// with body: one "v1,<base64>" per secret, separated by spaces (several
// during a rotation, so a receiver holding either secret verifies).
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	parts := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, Prefix))
		if err != nil || !strings.HasPrefix(s, Prefix) {
			return "", ErrSecret
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
		mac.Write(body)
		parts = append(parts, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(parts, " "), nil
}
