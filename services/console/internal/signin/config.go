package signin

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"

	"github.com/doclib/libs/config"
)

// CallbackPath is the console's redirect URI path, under its origin.
const CallbackPath = "/console/sign-in/callback"

// FromEnv reads the sign-in at an OpenID provider (CONSOLE_OIDC_*); nil
// when CONSOLE_OIDC_ISSUER_URL is unset (then any other CONSOLE_OIDC_*
// set is an error: a setting silently ignored is a sign-in that silently
// does not happen). The redirect URI is site (CONSOLE_ORIGIN's scheme and
// host, where browsers reach it) followed by CallbackPath: it must be
// registered at the provider as it is.
func FromEnv(env *config.Env, site string) *Provider {
	// As written, as the gateway takes OIDC_ISSUER_URL: the ID token's iss
	// must equal it byte for byte.
	issuer := env.String("CONSOLE_OIDC_ISSUER_URL", "")
	if issuer == "" {
		for _, k := range []string{"CONSOLE_OIDC_CLIENT_ID", "CONSOLE_OIDC_CLIENT_SECRET", "CONSOLE_OIDC_SCOPES"} {
			if env.OptionalSecret(k) != "" { // shown masked: one of them is a secret
				env.Check(k, errors.New("is set but CONSOLE_OIDC_ISSUER_URL is not"))
			}
		}
		return nil
	}
	env.Check("CONSOLE_OIDC_ISSUER_URL", checkIssuer(issuer))
	cfg := Config{
		Issuer:       issuer,
		ClientID:     env.Required("CONSOLE_OIDC_CLIENT_ID"),
		ClientSecret: env.OptionalSecret("CONSOLE_OIDC_CLIENT_SECRET"),
		Scopes:       env.List("CONSOLE_OIDC_SCOPES", []string{"openid", "profile"}),
		HTTP:         &http.Client{Timeout: ProviderTimeout},
	}
	if !slices.Contains(cfg.Scopes, "openid") {
		env.Check("CONSOLE_OIDC_SCOPES", errors.New("must include openid"))
	}
	if site != "" {
		cfg.RedirectURL = site + CallbackPath
	}
	return New(cfg)
}

// checkIssuer: an absolute https URL, or http on a loopback address (a
// provider in a test).
func checkIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errors.New("is not an absolute https URL")
	case u.Scheme != "https" && !loopback(u.Hostname()):
		return errors.New("must be https (http only on a loopback address, for tests)")
	}
	return nil
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
