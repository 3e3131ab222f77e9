package signin

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/doclib/libs/config"
)

// CallbackPath is the console's redirect URI path, under its origin.
const CallbackPath = "/console/sign-in/callback"

// FromEnv reads the sign-in at an OpenID provider (CONSOLE_OIDC_*); nil
// when CONSOLE_OIDC_ISSUER_URL is unset. The redirect URI is the
// console's origin (CONSOLE_ORIGIN, where browsers reach it) followed by
// CallbackPath: it must be registered at the provider as it is.
func FromEnv(env *config.Env, origin *url.URL) *Provider {
	issuer := env.OptionalURL("CONSOLE_OIDC_ISSUER_URL")
	if issuer == nil {
		return nil
	}
	cfg := Config{
		Issuer:       issuer.String(),
		ClientID:     env.Required("CONSOLE_OIDC_CLIENT_ID"),
		ClientSecret: env.OptionalSecret("CONSOLE_OIDC_CLIENT_SECRET"),
		Scopes:       env.List("CONSOLE_OIDC_SCOPES", []string{"openid", "profile"}),
		HTTP:         &http.Client{Timeout: ProviderTimeout},
	}
	if !slices.Contains(cfg.Scopes, "openid") {
		env.Check("CONSOLE_OIDC_SCOPES", errors.New("must include openid"))
	}
	if origin != nil {
		cfg.RedirectURL = origin.Scheme + "://" + origin.Host + CallbackPath
	}
	return New(cfg)
}
