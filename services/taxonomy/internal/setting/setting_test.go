package setting

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/validation"
)

func TestCheckEmail(t *testing.T) {
	t.Parallel()
	good := []string{"moderation@example.org", "m@" + strings.Repeat("b", 63) + ".org", "m@bücher.example", "m@1.example.org", "m@EXAMPLE.org", "a.b+tag@sub.example.co.uk", "x@xn--bcher-kva.example", "o'brien@example.ie"}
	bad := map[string]string{
		"":                                       "required",
		"not-an-email":                           "not an e-mail address",
		"a@":                                     "not an e-mail address",
		"@example.org":                           "not an e-mail address",
		"a@localhost":                            "host name",
		"a@[127.0.0.1]":                          "not an e-mail address",
		"a b@example.org":                        "space",
		"a@example.org\n":                        "space",
		"Mod <mod@example.org>":                  "space",
		"<mod@example.org>":                      "not an e-mail address",
		"a@@example.org":                         "not an e-mail address",
		"a@example..org":                         "not an e-mail address",
		strings.Repeat("a", 65) + "@example.org": "local part",
		"a@" + strings.Repeat("b", 250) + ".org": "longer than 254",
		"a,b@example.org":                        "not an e-mail address",
		"a@example.org,b@example.org":            "not an e-mail address",
		// Issue 21 item 10: RFC 5322 allows these in a domain; a mailto:
		// link built from them would carry the cc and body.
		"m@example.org?cc=attacker%40evil.org&body=hi": "host name",
		"m@ex{a}mple.org":                       "host name",
		"m@-.-":                                 "host name",
		"m@1.2.3.4":                             "host name",
		"m@a-.example.org":                      "host name",
		"m@example.org.":                        "not an e-mail address",
		"m@" + strings.Repeat("b", 64) + ".org": "host name",
		// In the local part they would do the same.
		"m?cc=attacker%40evil.org&body=hi@example.org": "? & # %",
		"a%0Abcc@example.org":                          "? & # %",
		"a#b@example.org":                              "? & # %",
		"a&b@example.org":                              "? & # %",
		"a\x01b@example.org":                           "control character",
	}
	for _, v := range good {
		if got := CheckEmail(v); got != "" {
			t.Errorf("CheckEmail(%q) = %q, want it accepted", v, got)
		}
	}
	for v, want := range bad {
		if got := CheckEmail(v); !strings.Contains(got, want) {
			t.Errorf("CheckEmail(%q) = %q, want it refused saying %q", v, got, want)
		}
	}
}

type memStore struct {
	s     Settings
	found bool
	err   error
}

func (m *memStore) Get(context.Context) (Settings, bool, error) { return m.s, m.found, m.err }
func (m *memStore) Put(_ context.Context, s Settings, check func(Settings, bool) error) error {
	if m.err != nil {
		return m.err
	}
	if check != nil {
		if err := check(m.s, m.found); err != nil {
			return err
		}
	}
	m.s, m.found = s, true
	return nil
}

func (m *memStore) Create(_ context.Context, s Settings) (bool, error) {
	if m.err != nil || m.found {
		return false, m.err
	}
	m.s, m.found = s, true
	return true, nil
}

func TestService(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	svc := NewService(st, "moderation@example.org")
	svc.now = func() time.Time { return time.Date(2026, 11, 22, 10, 15, 30, 123456789, time.UTC) }
	ctx := context.Background()

	got, err := svc.Get(ctx)
	if err != nil || got != (Settings{ModeratorEmail: "moderation@example.org"}) {
		t.Fatalf("before any set: %+v, %v; want the default", got, err)
	}
	_, err = svc.SetModeratorEmail(ctx, "nope", nil)
	var verrs validation.Errors
	if !errors.As(err, &verrs) || len(verrs) != 1 || verrs[0].Field != "moderatorEmail" {
		t.Fatalf("a bad address: %v, want a validation error on moderatorEmail", err)
	}
	if st.found {
		t.Fatal("a refused address was stored")
	}
	ctx = identity.With(ctx, identity.Caller{Name: "alice", Role: identity.Editor})
	refused := errors.New("refused")
	var seen Settings
	_, err = svc.SetModeratorEmail(ctx, "mod@example.org", func(cur Settings) error { seen = cur; return refused })
	if !errors.Is(err, refused) || st.found || seen.ModeratorEmail != "moderation@example.org" {
		t.Fatalf("a failed check: %v, stored %v, checked %+v; want its error, nothing stored, the default checked", err, st.found, seen)
	}
	set, err := svc.SetModeratorEmail(ctx, "  mod@example.org ", nil)
	want := Settings{ModeratorEmail: "mod@example.org", UpdatedAt: time.Date(2026, 11, 22, 10, 15, 30, 123000000, time.UTC), UpdatedBy: "alice"}
	if err != nil || set != want {
		t.Fatalf("set: %+v, %v; want %+v", set, err, want)
	}
	if got, _ := svc.Get(ctx); got != want {
		t.Errorf("after set: %+v, want %+v", got, want)
	}
	st.err = errors.New("down")
	if _, err := svc.Get(ctx); err == nil {
		t.Error("a store failure is not reported")
	}
}
