package pages

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// helpPage lists the keyboard shortcuts and the ways to work faster.
func (p *Pages) helpPage(c *gin.Context) {
	p.render(c, http.StatusOK, "help", view{Title: "Help", Data: zone(c).String()})
}
