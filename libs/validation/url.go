package validation

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// hostProfile is IDNA2008 as browsers look names up (UTS #46 non-transitional
// mapping: full-width letters and upper case map to their plain forms), with
// the bidi rule and label checks (hyphens, joiners, DNS lengths). Underscores
// stay allowed: real host names have them.
var hostProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false),
	idna.StrictDomainName(false), idna.VerifyDNSLength(true))

// HTTPURL checks that raw is an absolute http or https URL with a host, and
// returns it normalised, or why it is not acceptable ("" when it is). Parsing
// is strict: no white space, quotes, angle brackets, backslashes, controls,
// invisible or bidirectional characters anywhere; no user name or password;
// a port from 1 to 65535; a host that survives IDNA (golang.org/x/net/idna).
// The normal form has a lower-case scheme, the host in its ASCII (punycode)
// form, no empty port, and non-ASCII characters of the path, query and
// fragment percent-encoded (RFC 3987 §3.1), so what is stored reads the same
// in every client. HTTPURL of its own result returns it unchanged.
func HTTPURL(raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "is required"
	}
	if !utf8.ValidString(raw) {
		return "", "must be valid UTF-8"
	}
	for i, r := range raw {
		if msg := urlRune(r); msg != "" {
			return "", fmt.Sprintf("must not contain %s (at byte %d)", msg, i)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "", "must be an absolute http or https URL"
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Sprintf("must use http or https (got '%s')", u.Scheme)
	}
	if u.User != nil {
		return "", "must not carry a user name or password"
	}
	if u.Hostname() == "" {
		return "", "must name a host"
	}
	if h := u.Hostname(); !utf8.ValidString(h) || strings.IndexFunc(h, func(r rune) bool { return urlRune(r) != "" }) >= 0 {
		return "", "must have a valid host name" // a percent-escape decoded into something no host holds
	}
	host, msg := normalHost(u.Hostname())
	if msg != "" {
		return "", msg
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Sprintf("must have a port from 1 to 65535 (got '%s')", port)
		}
		host = net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(n))
	}
	var b strings.Builder
	b.WriteString(scheme + "://" + host + escapeNonASCII(u.EscapedPath()))
	if u.ForceQuery || u.RawQuery != "" {
		b.WriteString("?" + escapeNonASCII(u.RawQuery))
	}
	if u.Fragment != "" {
		b.WriteString("#" + escapeNonASCII(u.EscapedFragment()))
	}
	return b.String(), ""
}

// urlRune names what r is when a URL may not hold it, or "". RFC 3986 has no
// place for these anywhere in a URL; a client would have to guess.
func urlRune(r rune) string {
	switch {
	case r < 0x80 && (r <= ' ' || r == 0x7f):
		return "spaces or control characters"
	case strings.ContainsRune("\"<>\\^`{|}", r):
		return fmt.Sprintf("'%c'", r)
	case unicode.IsSpace(r) || unicode.IsControl(r):
		return "spaces or control characters"
	case IsBidiControl(r) || IsInvisible(r):
		return fmt.Sprintf("invisible or bidirectional characters (U+%04X)", r)
	}
	return ""
}

// normalHost returns the host's ASCII form: an IP address as it is (IPv6 in
// brackets), a name through IDNA, lower case; or why it is not a host.
func normalHost(h string) (string, string) {
	if ip := net.ParseIP(h); ip != nil {
		if strings.Contains(h, ":") {
			return "[" + strings.ToLower(h) + "]", ""
		}
		return h, ""
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", "must have a valid host name (IDNA: " + strings.TrimPrefix(err.Error(), "idna: ") + ")"
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", fmt.Sprintf("must have a valid host name ('%c' is not allowed in one)", c)
		}
	}
	return a, ""
}

// escapeNonASCII percent-encodes the bytes of s above 0x7F, leaving the rest
// (already-escaped sequences included) as it is.
func escapeNonASCII(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c < 0x80 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
