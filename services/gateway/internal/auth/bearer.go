package auth

import (
	"errors"
	"strings"
)

// bearer extracts the token of an "Authorization: Bearer <token>" header
// (RFC 6750 §2.1): the scheme is case-insensitive (RFC 9110 §11.1), and the
// token must be a b64token. Anything else in it (a space, a non-ASCII
// character such as a no-break space pasted with it, a quote) makes the
// header malformed rather than quietly cleaned up: the token is compared
// exactly as sent. Spaces at either end of the header value are not part
// of it (HTTP removes them before the gateway sees it).
func bearer(header string) (string, error) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errors.New("the Authorization header must use the Bearer scheme (Authorization: Bearer <token>)")
	}
	token = strings.TrimLeft(token, " ") // 1*SP between the scheme and the token
	if token == "" {
		return "", errors.New("the bearer token is empty")
	}
	if !isB64Token(token) {
		return "", errors.New("the bearer token is malformed: it may hold only letters, digits and - . _ ~ + / (then =), with no spaces")
	}
	return token, nil
}

// isB64Token reports whether s matches b64token = 1*( ALPHA / DIGIT / "-" /
// "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
