package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/taxonomy/internal/setting"
)

// Settings serves the public settings (CONTRACT.md §7, "public config"):
// GET /public/config for the app, GET and PUT /bo/config for editors. Both
// reads are answered from renderings kept in memory and renewed when the
// settings' revision moves, like the categories.
type Settings struct {
	svc   *setting.Service
	cache *rendering.Cache[settingsRenderings]
}

type settingsRenderings struct{ public, admin *rendering.Rendering }

// NewSettings returns the settings' handler; rev tells when they changed.
func NewSettings(svc *setting.Service, rev Revisioner) *Settings {
	h := &Settings{svc: svc}
	h.cache = &rendering.Cache[settingsRenderings]{Load: h.render, Revision: rev.Revision, MaxAge: maxAge}
	return h
}

// Register adds the routes to r; every GET answers HEAD too.
func (h *Settings) Register(r gin.IRouter) {
	httpx.GET(r, "/public/config", h.public)
	httpx.GET(r, "/bo/config", h.admin)
	r.PUT("/bo/config", h.put)
	r.PUT("/bo/import/config", h.importConfig)
}

// The JSON shapes.
type (
	publicConfig struct {
		ModeratorEmail string `json:"moderatorEmail"`
	}
	adminConfig struct {
		ModeratorEmail string `json:"moderatorEmail"`
		// Absent while the deployment's default (MODERATOR_EMAIL) applies.
		UpdatedAt string `json:"updatedAt,omitempty"`
		UpdatedBy string `json:"updatedBy,omitempty"`
	}
	configUpdate struct {
		ModeratorEmail *string `json:"moderatorEmail"`
	}
)

func toAdminConfig(s setting.Settings) adminConfig {
	out := adminConfig{ModeratorEmail: s.ModeratorEmail, UpdatedBy: s.UpdatedBy}
	if !s.UpdatedAt.IsZero() {
		out.UpdatedAt = httpx.FormatTime(s.UpdatedAt)
	}
	return out
}

func (h *Settings) render(ctx context.Context) (settingsRenderings, error) {
	s, err := h.svc.Get(ctx)
	if err != nil {
		return settingsRenderings{}, err
	}
	var out settingsRenderings
	if out.public, err = rendering.JSON(publicConfig{ModeratorEmail: s.ModeratorEmail}); err != nil {
		return settingsRenderings{}, err
	}
	if out.admin, err = rendering.JSON(toAdminConfig(s)); err != nil {
		return settingsRenderings{}, err
	}
	return out, nil
}

func (h *Settings) public(c *gin.Context) {
	r, err := h.cache.Get(c, publicLag)
	if err != nil {
		fail(c, err)
		return
	}
	r.public.Serve(c.Writer, c.Request, rendering.Public)
}

func (h *Settings) admin(c *gin.Context) {
	r, err := h.cache.Get(c, 0)
	if err != nil {
		fail(c, err)
		return
	}
	r.admin.Serve(c.Writer, c.Request, rendering.Private)
}

func (h *Settings) put(c *gin.Context) {
	defer h.cache.Invalidate() // whatever the answer: a timed-out write may have landed
	var in configUpdate
	if !httpx.BindJSON(c, &in) {
		return
	}
	email := ""
	if in.ModeratorEmail != nil {
		email = *in.ModeratorEmail
	}
	s, err := h.svc.SetModeratorEmail(c, email, h.unchanged(c))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAdminConfig(s))
}

// unchanged is the check of a PUT with If-Match: the tag must be the ETag
// of GET /bo/config as it is when the write runs (in its transaction). Nil
// without If-Match.
func (h *Settings) unchanged(c *gin.Context) setting.Check {
	v := ifMatch(c)
	if v == "" {
		return nil
	}
	return func(current setting.Settings) error {
		r, err := rendering.JSON(toAdminConfig(current))
		if err != nil {
			return err
		}
		if !matches(v, r) {
			return errPrecondition
		}
		return nil
	}
}
