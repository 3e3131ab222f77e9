// Package config reads a service's settings from environment variables into
// typed values, collecting every problem so a bad start-up names them all at
// once.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Env reads settings from an environment. The zero value is not usable; use
// FromEnviron or FromMap.
type Env struct {
	lookup func(string) (string, bool)
	errs   []string
	shown  []slog.Attr
}

// FromEnviron reads the process environment.
func FromEnviron() *Env { return &Env{lookup: os.LookupEnv} }

// FromMap reads a fixed map, for tests.
func FromMap(m map[string]string) *Env {
	return &Env{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

func (e *Env) raw(key string) (string, bool) {
	v, ok := e.lookup(key)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func (e *Env) fail(key, format string, args ...any) {
	e.errs = append(e.errs, key+": "+fmt.Sprintf(format, args...))
}

// show records a setting for Attrs. A variable whose name says it holds a
// secret is masked whatever its value; any other value has the user
// information of its URIs and its secret query parameters masked (a
// MONGODB_URI carries credentials).
func (e *Env) show(key string, v any) {
	switch {
	case IsSecretName(key):
		v = Masked
	case isString(v):
		v = Redact(v.(string))
	}
	if list, ok := v.([]string); ok {
		shown := make([]string, len(list))
		for i, s := range list {
			shown[i] = Redact(s)
		}
		v = shown
	}
	e.shown = append(e.shown, slog.Any(key, v))
}

func isString(v any) bool { _, ok := v.(string); return ok }

// String returns the value of key, or def when it is unset or empty.
func (e *Env) String(key, def string) string {
	v, ok := e.raw(key)
	if !ok {
		v = def
	}
	e.show(key, v)
	return v
}

// Required returns the value of key and records an error when it is unset.
func (e *Env) Required(key string) string {
	v, ok := e.raw(key)
	if !ok {
		e.fail(key, "is required")
	}
	e.show(key, v)
	return v
}

// Secret returns the value of key, required, and never shows it.
func (e *Env) Secret(key string) string {
	v, ok := e.raw(key)
	if !ok {
		e.fail(key, "is required")
	}
	e.show(key, Masked)
	return v
}

// OptionalSecret returns the value of key, or "" when unset, and never
// shows it: Attrs reports only whether it is set. The value is taken as
// written, apart from spaces and new lines at its ends (a Secret mounted
// from a file usually ends with one); the caller validates the rest.
func (e *Env) OptionalSecret(key string) string {
	v, ok := e.raw(key)
	state := "unset"
	if ok {
		state = "set, masked"
	}
	e.shown = append(e.shown, slog.String(key, state)) // never the value, whatever show would do
	return v
}

// List returns the comma-separated values of key, or def when unset.
func (e *Env) List(key string, def []string) []string {
	v, ok := e.raw(key)
	out := def
	if ok {
		out = splitList(v)
	}
	e.show(key, out)
	return out
}

// Int returns the integer value of key within [min, max], or def when unset.
func (e *Env) Int(key string, def, min, max int64) int64 {
	v, ok := e.raw(key)
	if !ok {
		e.show(key, def)
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		e.fail(key, "%q is not an integer", v)
		return def
	}
	if n < min || n > max {
		e.fail(key, "%d is outside [%d, %d]", n, min, max)
		return def
	}
	e.show(key, n)
	return n
}

// Duration returns the duration value of key (Go syntax, e.g. "5s"), or def
// when unset. Negative durations are refused.
func (e *Env) Duration(key string, def time.Duration) time.Duration {
	v, ok := e.raw(key)
	if !ok {
		e.show(key, def.String())
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.fail(key, "%q is not a duration such as 5s or 2m", v)
		return def
	}
	e.show(key, d.String())
	return d
}

// Bool returns the boolean value of key, or def when unset.
func (e *Env) Bool(key string, def bool) bool {
	v, ok := e.raw(key)
	if !ok {
		e.show(key, def)
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(key, "%q is not a boolean", v)
		return def
	}
	e.show(key, b)
	return b
}

// URL returns key as an absolute http(s) URL, or def when unset. An empty
// def makes the key required.
func (e *Env) URL(key, def string) *url.URL {
	v, ok := e.raw(key)
	if !ok {
		if def == "" {
			e.fail(key, "is required")
			e.show(key, "")
			return nil
		}
		v = def
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.fail(key, "%q is not an absolute http(s) URL", Redact(v))
		return nil
	}
	e.show(key, u.String())
	return u
}

// OptionalURL returns key as an absolute http(s) URL, or nil when unset
// or empty (an optional part, such as the gateway's console).
func (e *Env) OptionalURL(key string) *url.URL {
	if v, ok := e.raw(key); !ok || v == "" {
		e.show(key, "")
		return nil
	}
	return e.URL(key, "")
}

// Check records err, if any, against key: for rules across several values.
func (e *Env) Check(key string, err error) {
	if err != nil {
		e.fail(key, "%s", err.Error())
	}
}

// Err returns one error naming every invalid setting, or nil.
func (e *Env) Err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return errors.New("invalid configuration: " + strings.Join(e.errs, "; "))
}

// Attrs returns the settings read, secrets masked, for one start-up log line.
func (e *Env) Attrs() []any {
	out := make([]any, len(e.shown))
	for i, a := range e.shown {
		out[i] = a
	}
	return out
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
