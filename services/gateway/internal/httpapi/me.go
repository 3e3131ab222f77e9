package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/problem"
)

// me is what GET /bo/me answers.
type me struct {
	Name string        `json:"name"`
	Role identity.Role `json:"role"`
}

// whoAmI answers GET /bo/me: the caller guardBackOffice authenticated, so
// a client (the console at sign-in) learns its name and role with a read
// that changes nothing, decided exactly as for every other /bo route.
func whoAmI(w http.ResponseWriter, r *http.Request) {
	caller, ok := identity.From(r.Context())
	if !ok { // guardBackOffice runs first: a route wired without it must not answer a nameless 200
		problem.Write(w, problem.Internal("no authenticated caller"))
		return
	}
	body, _ := json.Marshal(me{Name: caller.Name, Role: caller.Role})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	// The answer depends on the Authorization header, which caches do not
	// key on: nobody keeps it.
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}
