package main

import "github.com/doclib/libs/ratelimit"

// failureLimit is the console's budget of failed token sign-ins per
// browser address (CONSOLE_SIGNIN_FAILURE_LIMIT a minute, also the
// burst); nil when 0.
func failureLimit(perMinute int64) *ratelimit.Limiter {
	if perMinute == 0 {
		return nil
	}
	return ratelimit.New(float64(perMinute)/60, int(perMinute), ratelimit.DefaultMaxClients)
}
