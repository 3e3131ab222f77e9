package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/doclib/libs/identity"
)

// StaticToken is one configured static API token.
type StaticToken struct {
	Name  string
	Role  identity.Role
	Token string
}

// MinTokenLength is the shortest static token accepted. The development
// tokens (dev-token) fit; a production token should be far longer (the
// chart asks for 32 characters).
const MinTokenLength = 8

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$`)

// ParseStaticTokens reads BO_API_TOKENS: entries NAME:ROLE:TOKEN separated
// by commas or new lines (so a Secret can hold one per line), e.g.
// "alice:editor:Zm9v...,ci-reader:viewer:YmFy...". Empty entries are
// skipped. An entry is taken exactly as written: spaces around a token
// would never match what a client sends, so they are an error, as are an
// unknown role, a bad or repeated name and a repeated token. Errors name
// the entry by its position and name, never by its token.
func ParseStaticTokens(raw string) ([]StaticToken, error) {
	var out []StaticToken
	var errs []error
	names, tokens := map[string]bool{}, map[string]bool{}
	n := 0
	for _, entry := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == '\n' }) {
		entry = strings.TrimSuffix(entry, "\r")
		if strings.TrimSpace(entry) == "" {
			continue
		}
		n++
		name, rest, ok1 := strings.Cut(entry, ":")
		role, token, ok2 := strings.Cut(rest, ":")
		where := fmt.Sprintf("entry %d", n)
		if ok1 && ok2 && validName.MatchString(name) { // else the "name" may be a token
			where += " (" + name + ")"
		}
		switch {
		case !ok1 || !ok2:
			errs = append(errs, fmt.Errorf("%s is not NAME:ROLE:TOKEN", where))
			continue
		case !validName.MatchString(name):
			errs = append(errs, fmt.Errorf("%s: the name must be 1 to 64 of A-Z a-z 0-9 . _ @ + -, starting with a letter or digit", where))
		case names[name]:
			errs = append(errs, fmt.Errorf("%s: the name is used twice", where))
		}
		if r := identity.Role(role); !r.Valid() {
			errs = append(errs, fmt.Errorf("%s: the role must be viewer or editor", where))
		}
		switch {
		case token != strings.TrimSpace(token):
			errs = append(errs, fmt.Errorf("%s: the token has spaces around it (tokens are compared exactly)", where))
		case len(token) < MinTokenLength:
			errs = append(errs, fmt.Errorf("%s: the token is shorter than %d characters", where, MinTokenLength))
		case !isB64Token(token):
			errs = append(errs, fmt.Errorf("%s: the token may hold only letters, digits and - . _ ~ + / (then =)", where))
		case tokens[token]:
			errs = append(errs, fmt.Errorf("%s: the token is the same as an earlier entry's", where))
		}
		names[name], tokens[token] = true, true
		out = append(out, StaticToken{Name: name, Role: identity.Role(role), Token: token})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Static accepts the configured static API tokens. It keeps only their
// SHA-256 sums, so the comparison time depends neither on the tokens'
// lengths nor on where a presented token first differs.
type Static struct {
	sums    [][sha256.Size]byte
	callers []identity.Caller
}

// NewStatic returns a verifier for tokens.
func NewStatic(tokens []StaticToken) *Static {
	s := &Static{sums: make([][sha256.Size]byte, len(tokens)), callers: make([]identity.Caller, len(tokens))}
	for i, t := range tokens {
		s.sums[i] = sha256.Sum256([]byte(t.Token))
		s.callers[i] = identity.Caller{Name: t.Name, Role: t.Role}
	}
	return s
}

// Verify compares token with every configured token, without stopping at
// the first match, so timing does not tell which one matched. A token that
// looks like a JWT and matches none is left to the next verifier.
func (s *Static) Verify(_ context.Context, token string) (identity.Caller, error) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range s.sums {
		eq := subtle.ConstantTimeCompare(sum[:], s.sums[i][:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found >= 0 {
		return s.callers[found], nil
	}
	if looksLikeJWT(token) {
		return identity.Caller{}, ErrNotMine
	}
	return identity.Caller{}, &Invalid{Reason: "the bearer token is not valid"}
}

func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }
