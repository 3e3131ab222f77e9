package delivery

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/doclib/services/webhook/internal/destination"
	"github.com/doclib/services/webhook/internal/signature"
)

// Sender settings.
const (
	// Timeout bounds one attempt, from connecting to the end of the answer.
	Timeout = 10 * time.Second
	// maxAnswer is how much of an answer's body is read (and discarded):
	// a receiver answering 30 MB costs 64 KiB.
	maxAnswer = 64 << 10
	userAgent = "doclib-webhooks/1"
)

// Sender sends one signed request per attempt. It follows no redirect
// (a 3xx is a failed attempt), uses no proxy from the environment (which
// would connect in the guard's place), and connects only where the guard
// allows.
type Sender struct {
	client *http.Client
}

// NewSender returns a sender whose connections the guard checks.
func NewSender(guard *destination.Guard) *Sender {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           guard.DialContext(Timeout),
		TLSHandshakeTimeout:   Timeout,
		ResponseHeaderTimeout: Timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &Sender{client: &http.Client{
		Transport: tr,
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Message is what one attempt sends.
type Message struct {
	URL     string
	ID      string
	Body    []byte
	Secrets []string
}

// Send makes one attempt at now and reports it.
func (s *Sender) Send(ctx context.Context, m Message, now time.Time) Attempt {
	a := Attempt{At: now}
	sig, err := signature.Sign(m.Secrets, m.ID, now, m.Body)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		a.Error = "invalid URL: " + err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	start := time.Now()
	resp, err := s.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		a.StatusCode = resp.StatusCode
	}
	a.Latency = time.Since(start)
	switch {
	case err != nil:
		a.Error = describeError(err)
	case a.StatusCode >= 300 && a.StatusCode < 400:
		a.Error = "redirect to " + truncate(resp.Header.Get("Location"), 200) + " not followed"
	case a.StatusCode >= 400:
		a.Error = "HTTP " + strconv.Itoa(a.StatusCode)
	}
	return a
}

// describeError says what went wrong without the request's details
// (the URL may carry a token in its query).
func describeError(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, destination.ErrRefused):
		msg := err.Error()
		return "refused: " + msg[strings.Index(msg, destination.ErrRefused.Error()):]
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out after " + Timeout.String()
	case errors.Is(err, context.Canceled):
		return "cancelled (the service was stopping)"
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return truncate(ue.Unwrap().Error(), 300)
	}
	return truncate(err.Error(), 300)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
