package httpapi

import (
	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/webhook/internal/delivery"
	"github.com/doclib/services/webhook/internal/subscription"
)

// subscriptionIn is the body of a create (url and eventTypes required) or
// an update (every field optional).
type subscriptionIn struct {
	URL         *string              `json:"url"`
	EventTypes  *[]string            `json:"eventTypes"`
	Description *string              `json:"description"`
	Status      *subscription.Status `json:"status"`
}

func (in subscriptionIn) changes() subscription.Changes {
	return subscription.Changes{URL: in.URL, EventTypes: in.EventTypes, Description: in.Description, Status: in.Status}
}

// subscriptionOut never holds a secret: only created and rotated do.
type subscriptionOut struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	EventTypes     []string `json:"eventTypes"`
	Description    string   `json:"description"`
	Status         string   `json:"status"`
	DisabledReason string   `json:"disabledReason,omitempty"`
	// PreviousSecretExpiresAt: during a rotation, when the previous
	// secret stops signing.
	PreviousSecretExpiresAt string `json:"previousSecretExpiresAt,omitempty"`
	// SecretError: a stored secret does not open; nothing is sent until
	// a rotation.
	SecretError string `json:"secretError,omitempty"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
	CreatedBy   string `json:"createdBy,omitempty"`
	UpdatedBy   string `json:"updatedBy,omitempty"`
}

func toOut(s subscription.Subscription) subscriptionOut {
	out := subscriptionOut{ID: s.ID, URL: s.URL, EventTypes: s.EventTypes, Description: s.Description,
		Status: string(s.Status), DisabledReason: s.DisabledReason, SecretError: s.SecretError,
		CreatedAt: httpx.FormatTime(s.CreatedAt), UpdatedAt: httpx.FormatTime(s.UpdatedAt),
		CreatedBy: s.CreatedBy, UpdatedBy: s.UpdatedBy}
	if s.PreviousSecret != "" {
		out.PreviousSecretExpiresAt = httpx.FormatTime(s.PreviousUntil)
	}
	return out
}

// withSecret is a subscription as created or rotated: the one answer that
// shows its secret.
type withSecret struct {
	subscriptionOut
	Secret string `json:"secret"`
}

type attemptOut struct {
	At         string `json:"at"`
	StatusCode int    `json:"statusCode,omitempty"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error,omitempty"`
}

type deliveryOut struct {
	ID            string       `json:"id"`
	WebhookID     string       `json:"webhookId"`
	Type          string       `json:"type"`
	Status        string       `json:"status"`
	AttemptCount  int          `json:"attemptCount"`
	Attempts      []attemptOut `json:"attempts"`
	NextAttemptAt string       `json:"nextAttemptAt,omitempty"`
	EventTime     string       `json:"eventTime"`
	CreatedAt     string       `json:"createdAt"`
	DoneAt        string       `json:"doneAt,omitempty"`
}

func toDeliveryOut(d delivery.Delivery) deliveryOut {
	out := deliveryOut{ID: d.EventID, WebhookID: d.WebhookID(), Type: d.Type, Status: string(d.Status),
		AttemptCount: d.AttemptCount, Attempts: make([]attemptOut, len(d.Attempts)),
		EventTime: httpx.FormatTime(d.EventTime), CreatedAt: httpx.FormatTime(d.CreatedAt)}
	for i, a := range d.Attempts {
		out.Attempts[i] = attemptOut{At: httpx.FormatTime(a.At), StatusCode: a.StatusCode, LatencyMs: a.Latency.Milliseconds(), Error: a.Error}
	}
	if d.Status == delivery.Pending {
		out.NextAttemptAt = httpx.FormatTime(d.NextAttemptAt)
	}
	if !d.DoneAt.IsZero() {
		out.DoneAt = httpx.FormatTime(d.DoneAt)
	}
	return out
}
