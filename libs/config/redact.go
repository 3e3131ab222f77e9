package config

import (
	"regexp"
	"strings"
)

// Masked replaces every secret that start-up logs and error messages must
// not show.
const Masked = "xxxxx"

// secretName matches the names of variables that hold secrets, whatever
// function reads them: their values are never shown.
var secretName = regexp.MustCompile(`(?i)(SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|PRIVATE|(^|_)KEY$|ACCESS_KEY|API_KEY)`)

// secretParam matches query parameters of connection strings that carry a
// secret (MongoDB's authMechanismProperties can hold an AWS session token,
// tlsCertificateKeyFilePassword a password...).
var secretParam = regexp.MustCompile(`(?i)(pass|secret|token|credential|authmechanismproperties|(^|_)key$|signature)`)

// IsSecretName reports whether a variable named key holds a secret.
func IsSecretName(key string) bool { return secretName.MatchString(key) }

// Redact returns s with the user information of every URI in it (a
// "scheme://user:password@" part, several hosts allowed as in MongoDB
// connection strings) and the values of secret-looking query parameters
// masked, so it can be logged or put in an error message. It masks too
// much rather than too little: everything before the last '@' ahead of the
// query goes, a '/' in an unescaped password included.
func Redact(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		// One URI runs to white space or a list separator.
		end := strings.IndexAny(s, " \t\n,;")
		if end < 0 {
			end = len(s)
		}
		uri := s[:end]
		q := strings.IndexAny(uri, "?#")
		if q < 0 {
			q = len(uri)
		}
		if at := strings.LastIndexByte(uri[:q], '@'); at >= 0 {
			b.WriteString(Masked)
			uri = uri[at:]
			q -= at
		}
		b.WriteString(uri[:q])
		if q < len(uri) && uri[q] == '?' {
			b.WriteString("?" + redactQuery(uri[q+1:]))
		} else {
			b.WriteString(uri[q:])
		}
		s = s[end:]
	}
}

// redactQuery returns a query (and any fragment after it) with the values
// of secret parameters masked.
func redactQuery(s string) string {
	query, frag, hasFrag := strings.Cut(s, "#")
	params := strings.Split(query, "&")
	for i, p := range params {
		if k, _, ok := strings.Cut(p, "="); ok && secretParam.MatchString(k) {
			params[i] = k + "=" + Masked
		}
	}
	out := strings.Join(params, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}
