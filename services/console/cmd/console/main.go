// Command console serves the back-office console: web pages under
// /console/ (reached through the gateway's admin listener) with which
// editors manage the library. It keeps no data: every page calls the
// gateway's documented /bo API with the signed-in person's token.
package main

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/startup"
	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/pages"
	"github.com/doclib/services/console/internal/session"
	"github.com/doclib/services/console/internal/signin"
)

const service = "console"

func main() { startup.Main(service, run) }

type settings struct {
	server   httpx.ServerConfig
	logLevel string
	// apiURL is the gateway's admin listener, which serves /bo.
	apiURL     *url.URL
	apiTimeout time.Duration
	// origin is where browsers reach the console (the gateway's admin
	// listener, or its ingress): form posts from it are not cross-origin
	// although the proxy changes Host, and https there makes the session
	// cookie Secure.
	origin     *url.URL
	sessionTTL time.Duration
	// sessionKey seals the session cookies (at least 32 bytes); every
	// replica must have the same. Empty: a key made at start-up.
	sessionKey string
	// development shows the development tokens on the sign-in page
	// (make dev only).
	development bool
	tokenSignIn bool
	oidc        *signin.Provider // nil: no sign-in at an OpenID provider
	maxUpload   int64
	// signInFailures is failed token sign-ins allowed per minute per
	// browser address, also the burst; 0 counts none.
	signInFailures int64
}

// site is the console's origin as browsers send it (scheme and host), ""
// when CONSOLE_ORIGIN is missing (load fails then).
func (s settings) site() string {
	if s.origin == nil {
		return ""
	}
	return s.origin.Scheme + "://" + s.origin.Host
}

func load(env *config.Env) (settings, error) {
	s := settings{
		server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			Addr: ":8085", ReadTimeout: 10 * time.Minute, WriteTimeout: 10 * time.Minute,
		}),
		logLevel:    env.String("LOG_LEVEL", "info"),
		apiURL:      env.URL("CONSOLE_API_URL", ""),
		apiTimeout:  env.Duration("CONSOLE_API_TIMEOUT", 30*time.Second),
		origin:      env.URL("CONSOLE_ORIGIN", ""),
		sessionTTL:  env.Duration("CONSOLE_SESSION_TTL", 8*time.Hour),
		sessionKey:  env.OptionalSecret("CONSOLE_SESSION_KEY"),
		development: env.Bool("CONSOLE_DEVELOPMENT", false),
		tokenSignIn: env.Bool("CONSOLE_TOKEN_SIGNIN", false),
		maxUpload:   env.Int("MEDIA_MAX_UPLOAD_SIZE", 100<<20, 1, 1<<40),
		// Below the gateway's BO_AUTH_FAILURE_LIMIT (60): one browser never
		// spends the console's budget at the gateway alone.
		signInFailures: env.Int("CONSOLE_SIGNIN_FAILURE_LIMIT", 10, 0, 1_000_000),
	}
	if s.origin != nil && s.origin.Path != "" && s.origin.Path != "/" {
		env.Check("CONSOLE_ORIGIN", errors.New("must be an origin (scheme and host), without a path"))
	}
	if s.sessionKey != "" && len(s.sessionKey) < session.MinKeyLength {
		env.Check("CONSOLE_SESSION_KEY", session.ErrShortKey)
	}
	if s.sessionTTL < time.Minute {
		env.Check("CONSOLE_SESSION_TTL", errors.New("must be at least 1m"))
	}
	s.oidc = signin.FromEnv(env, s.site())
	if !s.tokenSignIn && s.oidc == nil {
		env.Check("CONSOLE_TOKEN_SIGNIN", errors.New("must be true when CONSOLE_OIDC_ISSUER_URL is unset: the console needs a way to sign in"))
	}
	return s, env.Err()
}

// run wires the console: logger, telemetry, the session store, the pages
// behind the security headers and the cross-origin protection, and the
// HTTP server, which at shutdown lets in-flight requests finish.
func run(ctx context.Context) error {
	env := config.FromEnviron()
	cfg, err := load(env)
	if err != nil {
		return err
	}
	proc, err := startup.Begin(ctx, service, env, cfg.logLevel)
	if err != nil {
		return err
	}
	defer proc.Stop()
	log := proc.Log
	if cfg.oidc != nil {
		cfg.oidc.DiscoverInBackground(log)
	}

	sessions := session.NewStore(cfg.sessionTTL)
	if cfg.sessionKey == "" {
		log.Warn("CONSOLE_SESSION_KEY is unset: sessions end when the console restarts and only this replica knows them")
	} else {
		if sessions, err = session.NewSealedStore([]byte(cfg.sessionKey), cfg.sessionTTL); err != nil {
			return err
		}
		if cfg.oidc != nil {
			cfg.oidc.UseKey([]byte(cfg.sessionKey))
		}
	}
	p, err := pages.New(pages.Config{
		API:            boclient.New(cfg.apiURL, cfg.apiTimeout),
		Sessions:       sessions,
		Development:    cfg.development,
		Log:            log,
		SecureCookie:   cfg.origin.Scheme == "https",
		TokenSignIn:    cfg.tokenSignIn,
		OIDC:           cfg.oidc,
		SignInFailures: failureLimit(cfg.signInFailures),
		Origin:         cfg.site(),
		Timeout:        cfg.apiTimeout,
	})
	if err != nil {
		return err
	}
	// Ready whenever this process serves: the API being down is shown on
	// the pages, it does not take the console out of its Service.
	health := httpx.NewHealth(nil)
	engine := httpx.NewEngine(service, log)
	engine.MaxMultipartMemory = 1 << 20 // the rest of an upload waits in a temporary file
	health.Register(engine)
	metrics.Register(engine) // the service's own port; the gateway forwards /console/ only
	// A form carries at most one upload of the gateway's largest media
	// (MEDIA_MAX_UPLOAD_SIZE) and the document's fields.
	engine.Use(pages.Headers, pages.LimitBody(cfg.maxUpload+1<<20))
	p.Register(engine)
	h, err := pages.CrossOrigin(engine, []string{cfg.site()})
	if err != nil {
		return err
	}
	return httpx.Serve(ctx, log, cfg.server, h, health)
}
