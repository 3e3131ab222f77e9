// Package idempotency makes a retried POST safe (IETF draft
// httpapi-idempotency-key-header): a request carrying an Idempotency-Key
// is run once per caller and key; a retry with the same key and the same
// request gets the first outcome again (status, body, relevant headers);
// the same key with another request is 422; a retry while the first is
// still running is 409. Keys are kept for a stated time in a store every
// replica shares.
//
// Keys (keys.go) keeps them: a collection with a TTL index in a database
// every service shares, the outcome committed in the request's
// transaction.
package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
)

// Header is the request header carrying the key.
const Header = "Idempotency-Key"

// MaxKeyLength bounds a key; the draft suggests UUIDs (36 characters).
const MaxKeyLength = 255

// ErrBadKey is a key that is empty, too long, or not a string of visible
// ASCII characters.
var ErrBadKey = errors.New("the Idempotency-Key must be 1 to 255 visible ASCII characters, as a structured-field string (in double quotes)")

// ParseKey reads the header's value: an RFC 8941 string ("..."), as the
// draft says; a bare value is taken as it is, for clients that send a
// UUID unquoted.
func ParseKey(v string) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" || len(v) > MaxKeyLength {
		return "", ErrBadKey
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e || v[i] == '"' || v[i] == '\\' {
			return "", ErrBadKey
		}
	}
	return v, nil
}

// ScopedID is the store's id of key sent by caller: keys of different
// callers never meet.
func ScopedID(caller, key string) string {
	sum := sha256.Sum256([]byte(caller + "\x00" + key))
	return hex.EncodeToString(sum[:])
}

// Fingerprinter digests a request: its method, path and body.
type Fingerprinter struct {
	h    hash.Hash
	fold *folding // a multipart body's boundary left out
}

// NewFingerprinter starts the digest of a request to method and path;
// write the body to it.
func NewFingerprinter(method, path string) *Fingerprinter {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\x00"))
	return &Fingerprinter{h: h}
}

func (f *Fingerprinter) Write(p []byte) (int, error) {
	if f.fold != nil {
		return f.fold.Write(p)
	}
	return f.h.Write(p)
}

// Sum is the fingerprint of everything written.
func (f *Fingerprinter) Sum() string {
	if f.fold != nil {
		f.fold.flush()
	}
	return hex.EncodeToString(f.h.Sum(nil))
}

// NewMultipartFingerprinter is NewFingerprinter for a multipart body with
// boundary: the boundary is left out of the digest, as a client sending
// the same parts again picks a new random one.
func NewMultipartFingerprinter(method, path, boundary string) *Fingerprinter {
	f := NewFingerprinter(method, path)
	if boundary != "" {
		f.fold = &folding{w: f.h, delim: []byte("--" + boundary)}
	}
	return f
}

// folding writes what it is given with every delim replaced by "--",
// across writes.
type folding struct {
	w     io.Writer
	delim []byte
	carry []byte
}

func (f *folding) Write(p []byte) (int, error) {
	buf := append(f.carry, p...)
	for {
		i := bytes.Index(buf, f.delim)
		if i < 0 {
			break
		}
		f.w.Write(buf[:i])
		f.w.Write([]byte("--"))
		buf = buf[i+len(f.delim):]
	}
	keep := min(len(buf), len(f.delim)-1)
	f.w.Write(buf[:len(buf)-keep])
	f.carry = bytes.Clone(buf[len(buf)-keep:])
	return len(p), nil
}

func (f *folding) flush() {
	f.w.Write(f.carry)
	f.carry = nil
}
