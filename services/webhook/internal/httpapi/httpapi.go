// Package httpapi serves the webhook subscriptions and their delivery log
// on /bo/webhooks (authenticated by the gateway, which lets viewers only
// read). It owns the JSON shapes and the one mapping from domain errors to
// problem+json. A secret appears in two answers only: the creation and the
// rotation.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/services/webhook/internal/delivery"
	"github.com/doclib/services/webhook/internal/eventtype"
	"github.com/doclib/services/webhook/internal/subscription"
)

// Deliveries is what the routes need of the delivery side.
type Deliveries interface {
	Log(ctx context.Context, sub string, limit int) ([]delivery.Delivery, error)
	Retry(ctx context.Context, sub, event string, now time.Time) error
}

// Pinger sends a test delivery.
type Pinger interface {
	Ping(ctx context.Context, s subscription.Subscription) (delivery.Delivery, error)
}

// Handler serves the routes.
type Handler struct {
	subs       *subscription.Service
	deliveries Deliveries
	pinger     Pinger
	// changed is told which subscription's queue has news (a retry).
	changed func(subs ...string)
}

// New returns a Handler.
func New(subs *subscription.Service, deliveries Deliveries, pinger Pinger, changed func(subs ...string)) *Handler {
	return &Handler{subs: subs, deliveries: deliveries, pinger: pinger, changed: changed}
}

// Register adds the routes to r; every GET answers HEAD too.
func (h *Handler) Register(r gin.IRouter) {
	r = r.Group("", httpx.Budget(httpx.RequestBudget))
	httpx.GET(r, "/bo/webhooks", h.list)
	r.POST("/bo/webhooks", h.create)
	httpx.GET(r, "/bo/webhooks/:id", h.get)
	r.PATCH("/bo/webhooks/:id", h.update)
	r.DELETE("/bo/webhooks/:id", h.remove)
	r.POST("/bo/webhooks/:id/rotate-secret", h.rotate)
	r.POST("/bo/webhooks/:id/ping", h.ping)
	httpx.GET(r, "/bo/webhooks/:id/deliveries", h.log)
	r.POST("/bo/webhooks/:id/deliveries/:delivery/retry", h.retry)
	httpx.GET(r, "/bo/webhook-event-types", h.eventTypes)
}

func (h *Handler) list(c *gin.Context) {
	subs, err := h.subs.List(c)
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]subscriptionOut, len(subs))
	for i, s := range subs {
		items[i] = toOut(s)
	}
	c.JSON(http.StatusOK, gin.H{"items": items})
}

func (h *Handler) create(c *gin.Context) {
	var in subscriptionIn
	if !httpx.BindJSON(c, &in) {
		return
	}
	s, err := h.subs.Create(c, in.changes())
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", "/bo/webhooks/"+s.ID)
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, withSecret{toOut(s), s.Secret})
}

func (h *Handler) get(c *gin.Context) {
	s, err := h.subs.Get(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toOut(s))
}

func (h *Handler) update(c *gin.Context) {
	var in subscriptionIn
	if !httpx.BindJSON(c, &in) {
		return
	}
	s, err := h.subs.Update(c, c.Param("id"), in.changes())
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toOut(s))
}

func (h *Handler) remove(c *gin.Context) {
	// Its deliveries go with it (the store's cascade).
	if err := h.subs.Delete(c, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *Handler) rotate(c *gin.Context) {
	s, err := h.subs.Rotate(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, withSecret{toOut(s), s.Secret})
}

func (h *Handler) ping(c *gin.Context) {
	s, err := h.subs.Get(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	d, err := h.pinger.Ping(c, s)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toDeliveryOut(d))
}

// Page sizes of the delivery log.
const (
	defaultLimit = 50
	maxLimit     = 200
)

func (h *Handler) log(c *gin.Context) {
	limit := defaultLimit
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxLimit {
			httpx.Fail(c, problem.BadRequest(fmt.Sprintf("limit must be an integer from 1 to %d", maxLimit),
				problem.FieldError{Field: "limit", Message: "must be an integer from 1 to 200"}))
			return
		}
		limit = n
	}
	id := c.Param("id")
	if _, err := h.subs.Get(c, id); err != nil {
		fail(c, err)
		return
	}
	ds, err := h.deliveries.Log(c, id, limit)
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]deliveryOut, len(ds))
	for i, d := range ds {
		items[i] = toDeliveryOut(d)
	}
	c.JSON(http.StatusOK, gin.H{"items": items})
}

func (h *Handler) retry(c *gin.Context) {
	id := c.Param("id")
	if _, err := h.subs.Get(c, id); err != nil {
		fail(c, err)
		return
	}
	if err := h.deliveries.Retry(c, id, c.Param("delivery"), time.Now().UTC()); err != nil {
		fail(c, err)
		return
	}
	h.changed(id)
	c.Status(http.StatusAccepted)
}

func (h *Handler) eventTypes(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"items": eventtype.All()})
}

// fail is the one mapping from domain errors to problem+json.
func fail(c *gin.Context, err error) {
	httpx.Abort(c, err, func(err error) *problem.Problem {
		switch {
		case errors.Is(err, subscription.ErrNotFound):
			return problem.NotFound(fmt.Sprintf("there is no webhook subscription '%s'", c.Param("id")))
		case errors.Is(err, delivery.ErrNotFound):
			return problem.NotFound(fmt.Sprintf("there is no delivery '%s' of this subscription", c.Param("delivery")))
		case errors.Is(err, subscription.ErrConflict):
			return problem.Conflict("conflict", "the subscription was changed by another request meanwhile; try again")
		}
		return problem.Common(err, "webhook database", mongox.IsUnavailable)
	})
}
