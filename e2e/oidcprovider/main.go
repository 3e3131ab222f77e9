// Command oidcprovider is a real OpenID provider for the e2e tests: the
// example provider of github.com/zitadel/oidc (exampleop, its login form
// and in-memory storage), configured as the console's identity provider
// would be in production. It is a module of its own, outside go.work,
// built by the tests: zitadel/oidc needs newer OpenTelemetry and oauth2
// versions than the services are pinned to, and in the workspace they
// would be raised for every module.
//
// Two changes to the example's storage, by wrapping it:
//   - the console's client gets JWT access tokens (the example's clients
//     give opaque ones, which the gateway cannot verify); their audience is
//     the client id, so the gateway's OIDC_AUDIENCE is the client id;
//   - the access token carries a "roles" claim, the user's role (the
//     private-claims hook), as the gateway's OIDC_ROLE_CLAIM reads it.
//
// Usage: oidcprovider -addr 127.0.0.1:PORT -client ID -secret S
// -user NAME:PASSWORD:ROLE [-user ...]. The issuer is http://ADDR.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// redirectGlob admits the console's callback on any loopback port (the
// tests' stacks pick theirs).
const (
	redirectGlob   = "http://127.0.0.1:*/console/sign-in/callback"
	postLogoutGlob = "http://127.0.0.1:*/console/sign-in*"
)

type userFlags []string

func (u *userFlags) String() string     { return strings.Join(*u, ",") }
func (u *userFlags) Set(v string) error { *u = append(*u, v); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:9998", "listen address; the issuer is http://ADDR")
	client := flag.String("client", "doclib-console", "the console's client id")
	secret := flag.String("secret", "console-secret", "the console's client secret")
	var users userFlags
	flag.Var(&users, "user", "NAME:PASSWORD:ROLE (the role claim's value; empty: none)")
	flag.Parse()
	if err := run(*addr, *client, *secret, users); err != nil {
		fmt.Fprintln(os.Stderr, "oidcprovider:", err)
		os.Exit(1)
	}
}

func run(addr, client, secret string, list []string) error {
	us, roles := userStore{}, map[string]string{}
	for _, u := range list {
		parts := strings.SplitN(u, ":", 3)
		if len(parts) != 3 {
			return fmt.Errorf("-user %q is not NAME:PASSWORD:ROLE", u)
		}
		us[parts[0]] = &storage.User{ID: parts[0], Username: parts[0], Password: parts[1],
			FirstName: parts[0], LastName: "Test", Email: parts[0] + "@example.org", EmailVerified: true}
		roles[parts[0]] = parts[2]
	}
	storage.RegisterClients(storage.WebClient(client, secret))
	st := &store{Storage: storage.NewStorage(us), roles: roles}
	issuer := "http://" + addr
	srv := &http.Server{Addr: addr, Handler: exampleop.SetupServer(issuer, st, nil, false),
		ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

// userStore is the provider's users, by id (their name).
type userStore map[string]*storage.User

func (u userStore) GetUserByID(id string) *storage.User { return u[id] }

func (u userStore) GetUserByUsername(name string) *storage.User { return u[name] }

func (u userStore) ExampleClientID() string { return storage.ServiceUserID }

// store is the example's storage with JWT access tokens carrying roles.
type store struct {
	*storage.Storage
	roles map[string]string // user id -> role
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

// GetPrivateClaimsFromScopes adds the user's role to the JWT access token.
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]any{}
	}
	if r := s.roles[userID]; r != "" {
		claims["roles"] = []string{r}
	}
	return claims, nil
}

// jwtClient is a client whose access tokens are JWTs, redirected to the
// console on any loopback port.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (jwtClient) RedirectURIGlobs() []string { return []string{redirectGlob} }

func (jwtClient) PostLogoutRedirectURIGlobs() []string { return []string{postLogoutGlob} }
