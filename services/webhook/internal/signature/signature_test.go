package signature

import (
	"strings"
	"testing"
	"time"
)

// The example of the Standard Webhooks specification (its test vector).
func TestSignMatchesTheSpecificationExample(t *testing.T) {
	t.Parallel()
	got, err := Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signature %q, want %q", got, want)
	}
}

func TestTwoSecretsGiveTwoSignatures(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	if a == b || !strings.HasPrefix(a, Prefix) {
		t.Fatalf("secrets %q %q", a, b)
	}
	got, err := Sign([]string{a, b}, "msg_1", time.Now(), []byte("{}"))
	if err != nil || len(strings.Fields(got)) != 2 {
		t.Errorf("Sign = %q, %v; want two signatures", got, err)
	}
	if _, err := Sign([]string{"nope"}, "msg_1", time.Now(), nil); err == nil {
		t.Error("a secret without whsec_ was accepted")
	}
}
