package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "net/http: timeout awaiting response headers" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestProblem(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "catalog", IsNotFound: true}}
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"refused", dial, http.StatusBadGateway, "bad_gateway"},
		{"unknown host", fmt.Errorf("wrapped: %w", dns), http.StatusBadGateway, "bad_gateway"},
		{"header timeout", timeoutErr{}, http.StatusGatewayTimeout, "upstream_timeout"},
		{"deadline", context.DeadlineExceeded, http.StatusGatewayTimeout, "upstream_timeout"},
		{"connection broke", errors.New("unexpected EOF"), http.StatusServiceUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Problem("catalog", tt.err)
			if p.Status != tt.status || p.Code != tt.code {
				t.Errorf("Problem(%v) = %d %s, want %d %s", tt.err, p.Status, p.Code, tt.status, tt.code)
			}
			if !strings.Contains(p.Detail, "catalog service") || strings.Contains(p.Detail, tt.err.Error()) {
				t.Errorf("detail %q must name the service in plain words, without the error", p.Detail)
			}
		})
	}
}
