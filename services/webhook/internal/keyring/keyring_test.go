package keyring

import (
	"errors"
	"strings"
	"testing"
)

const (
	oldKey = "an-old-key-of-at-least-32-bytes-long"
	newKey = "a-new-key-of-at-least-32-bytes-long!"
)

func TestSealOpens(t *testing.T) {
	t.Parallel()
	k, err := New(newKey)
	if err != nil {
		t.Fatal(err)
	}
	sealed := k.Seal("whsec_abc", "wh_1/secret")
	if strings.Contains(sealed, "whsec_abc") || !strings.HasPrefix(sealed, "v1."+k.CurrentID()+".") {
		t.Fatalf("sealed %q: want v1.<key id>. and no plain text", sealed)
	}
	if again := k.Seal("whsec_abc", "wh_1/secret"); again == sealed {
		t.Error("sealing twice gave the same value: the nonce must be fresh")
	}
	if got, err := k.Open(sealed, "wh_1/secret"); err != nil || got != "whsec_abc" {
		t.Errorf("Open = %q, %v", got, err)
	}
	if _, err := k.Open(sealed, "wh_2/secret"); err == nil {
		t.Error("a sealed secret moved to another record opened")
	}
	tampered := sealed[:len(sealed)-2] + "AA"
	if _, err := k.Open(tampered, "wh_1/secret"); err == nil {
		t.Error("an altered sealed secret opened")
	}
}

// A rotation: the new key seals, the old one still opens what it sealed;
// a keyring without the old key says so.
func TestRotation(t *testing.T) {
	t.Parallel()
	old, _ := New(oldKey)
	sealed := old.Seal("whsec_abc", "wh_1/secret")
	rotated, err := New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(sealed, "wh_1/secret"); err != nil || got != "whsec_abc" {
		t.Errorf("the previous key does not open: %q, %v", got, err)
	}
	if id, _ := KeyID(rotated.Seal("x", "w")); id == old.CurrentID() || id != rotated.CurrentID() {
		t.Error("a rotated keyring must seal with its new key")
	}
	only, _ := New(newKey)
	if _, err := only.Open(sealed, "wh_1/secret"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Open without the key: %v, want ErrUnknownKey", err)
	}
}

func TestShortKeysAndMalformedValuesAreRefused(t *testing.T) {
	t.Parallel()
	if _, err := New("short"); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	if _, err := New(newKey, "short"); err == nil {
		t.Error("a 5-byte other key was accepted")
	}
	k, _ := New(newKey)
	for _, v := range []string{"", "whsec_abc", "v1.", "v1." + k.CurrentID() + ".!!", "v1." + k.CurrentID() + ".AA"} {
		if _, err := k.Open(v, "w"); err == nil {
			t.Errorf("Open(%q) succeeded", v)
		}
	}
}
