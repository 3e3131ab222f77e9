package events

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
)

// Ready is a readiness check: the connection to NATS is up.
func Ready(nc *nats.Conn) func(context.Context) error {
	return func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("not connected to NATS (" + nc.Status().String() + ")")
		}
		return nil
	}
}
