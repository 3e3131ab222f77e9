package subscription

import (
	"errors"
	"testing"
	"time"

	"github.com/doclib/libs/validation"
	"github.com/doclib/services/webhook/internal/destination"
)

func ptr[T any](v T) *T { return &v }

func TestApplyCollectsEveryFieldError(t *testing.T) {
	t.Parallel()
	r := Rules{Guard: destination.NewGuard(nil)}
	cases := []struct {
		name   string
		c      Changes
		fields []string
	}{
		{"not a URL", Changes{URL: ptr("not a url")}, []string{"url"}},
		{"http refused", Changes{URL: ptr("http://example.com/hook")}, []string{"url"}},
		{"loopback literal", Changes{URL: ptr("https://127.0.0.1/hook")}, []string{"url"}},
		{"metadata literal", Changes{URL: ptr("https://169.254.169.254/latest")}, []string{"url"}},
		{"documentation range literal", Changes{URL: ptr("https://203.0.113.9/hook")}, []string{"url"}},
		{"unknown type", Changes{EventTypes: ptr([]string{"document.*", "document.exploded"})}, []string{"eventTypes[1]"}},
		{"no types", Changes{EventTypes: ptr([]string{})}, []string{"eventTypes"}},
		{"status disabled", Changes{Status: ptr(Disabled)}, []string{"status"}},
		{"all at once", Changes{URL: ptr("ftp://x"), EventTypes: ptr([]string{"nope"}), Status: ptr(Status("on"))},
			[]string{"url", "eventTypes[0]", "status"}},
	}
	for _, c := range cases {
		var s Subscription
		err := r.apply(&s, c.c)
		var verrs validation.Errors
		if !errors.As(err, &verrs) || len(verrs) != len(c.fields) {
			t.Errorf("%s: %v, want errors on %v", c.name, err, c.fields)
			continue
		}
		for i, f := range c.fields {
			if verrs[i].Field != f {
				t.Errorf("%s: error %d on %q, want %q", c.name, i, verrs[i].Field, f)
			}
		}
	}
}

func TestApplyAcceptsAndNormalises(t *testing.T) {
	t.Parallel()
	r := Rules{AllowHTTP: true, Guard: destination.NewGuard(nil)}
	s := Subscription{Status: Disabled, DisabledReason: "gone"}
	err := r.apply(&s, Changes{URL: ptr("HTTP://Example.COM/hook"), EventTypes: ptr([]string{"document.*", "document.*", "tag.deleted"}),
		Description: ptr("  CDN purge "), Status: ptr(Active)})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != "http://example.com/hook" || len(s.EventTypes) != 2 || s.Description != "CDN purge" || s.Status != Active || s.DisabledReason != "" {
		t.Errorf("got %+v", s)
	}
	if !s.Wants("document.purged") || s.Wants("media.deleted") {
		t.Error("Wants does not follow the patterns")
	}
}

func TestSecretsDuringARotation(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := Subscription{Secret: "new", PreviousSecret: "old", PreviousUntil: now.Add(time.Minute)}
	if got := s.Secrets(now); len(got) != 2 || got[0] != "new" || got[1] != "old" {
		t.Errorf("during the grace: %v", got)
	}
	if got := s.Secrets(now.Add(2 * time.Minute)); len(got) != 1 || got[0] != "new" {
		t.Errorf("after the grace: %v", got)
	}
}
