package signin

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Skew is taken off a token's lifetime: the gateway's clock may be ahead
// of ours, and a page's calls take time. A token living under 2 minutes
// loses a quarter of its life instead, so a short-lived one (a provider
// set to 30 s) still gives a session, not one over at once.
const Skew = 30 * time.Second

// MinSession is the shortest session a sign-in starts: a token that
// leaves less is refused with words, not a session over at once that
// sends the person back to the sign-in page without a reason.
const MinSession = 5 * time.Second

// sessionEnd is when a session sending tok, received at now, must end: the
// earlier of the token endpoint's expires_in and the access token's own
// exp (when it is a JWT), less the skew; zero when neither is said.
func sessionEnd(tok *oauth2.Token, now time.Time) time.Time {
	end := tok.Expiry
	if exp := jwtExpiry(tok.AccessToken); !exp.IsZero() && (end.IsZero() || exp.Before(end)) {
		end = exp
	}
	if end.IsZero() {
		return end
	}
	return end.Add(-min(Skew, max(end.Sub(now), 0)/4))
}

// jwtExpiry reads exp from a JWT without checking it (the gateway does:
// here it only shortens a session); zero when raw is no JWT or has none.
func jwtExpiry(raw string) time.Time {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return time.Time{}
	}
	secs, err := claims.Exp.Int64()
	if err != nil || secs <= 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0)
}
