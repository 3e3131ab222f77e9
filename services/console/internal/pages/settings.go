package pages

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
)

type settingsData struct {
	Stored boclient.Config
	Email  string // as typed, or as stored
	Err    *boclient.APIError
}

// FieldError is the API's message about field.
func (d settingsData) FieldError(field string) string {
	if d.Err == nil {
		return ""
	}
	return sentence(settingsLabels[field], d.Err.Field(field))
}

// settingsLabels are the settings form's fields in its words.
var settingsLabels = map[string]string{"moderatorEmail": "The moderation e-mail address"}

func (p *Pages) settingsPage(c *gin.Context) {
	s, _ := current(c)
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	cfg, err := p.cfg.API.Config(ctx, s.Token)
	if err != nil {
		p.fail(c, err)
		return
	}
	notice := ""
	if c.Query("done") == "saved" {
		notice = "The settings were saved."
	}
	p.render(c, http.StatusOK, "settings", view{Title: "Settings", Notice: notice, Data: settingsData{Stored: cfg, Email: cfg.ModeratorEmail}})
}

// saveSettings sets the moderation address; a refusal shows the form
// again with what was typed and the API's words next to the field.
func (p *Pages) saveSettings(c *gin.Context) {
	d := settingsData{Email: c.PostForm("moderatorEmail")}
	s, ok := current(c)
	if !ok {
		d.Err = sessionEnded
		p.render(c, http.StatusUnauthorized, "settings", view{Title: "Settings", Error: d.Err, Data: d})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	if _, err := p.cfg.API.SetConfig(ctx, s.Token, d.Email); err != nil {
		d.Err = explain(boclient.AsAPIError(err))
		d.Stored, _ = p.cfg.API.Config(ctx, s.Token) // who set it last, if it can be read
		p.render(c, status(d.Err), "settings", view{Title: "Settings", Error: errorOnce(d.Err, settingsLabels), Data: d})
		return
	}
	c.Redirect(http.StatusSeeOther, Base+"/settings?done=saved")
}
