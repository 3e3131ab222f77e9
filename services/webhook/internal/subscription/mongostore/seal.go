package mongostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/services/webhook/internal/keyring"
)

// SealSecrets runs at start-up (a no-op without keys, unless secrets are
// sealed: then it fails as below): it seals with the current key every secret
// stored in plain text (before secrets were sealed) or sealed with another
// key of the keyring (a rotation), and returns how many subscriptions it
// rewrote. A secret sealed with a key the keyring does not hold stops it
// with an error naming the key's id: the service must not start unable to
// sign. Every write seals too; this leaves no plain secret behind once
// the service has started. Each rewrite keeps the version and applies only
// to the version read, so a write meanwhile, or another replica doing the
// same, wins.
func (st *Store) SealSecrets(ctx context.Context) (int, error) {
	cur, err := st.coll.Find(ctx, bson.M{})
	if err != nil {
		return 0, fmt.Errorf("read subscriptions: %w", err)
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return 0, fmt.Errorf("read subscriptions: %w", err)
	}
	var unknown []string
	n := 0
	for _, d := range docs {
		if !st.needsSealing(d) {
			continue
		}
		s := st.subscription(d)
		_, _, err := st.secrets(d)
		if errors.Is(err, keyring.ErrUnknownKey) {
			unknown = append(unknown, d.ID+" (key "+st.missingKey(d)+")")
			continue
		}
		if err != nil {
			return n, fmt.Errorf("subscription %s: %w", d.ID, err)
		}
		res, err := st.coll.ReplaceOne(ctx, bson.M{"_id": d.ID, "version": d.Version}, st.toDoc(s, d.Version))
		if err != nil {
			return n, fmt.Errorf("seal the secret of subscription %s: %w", d.ID, err)
		}
		n += int(res.ModifiedCount)
	}
	if len(unknown) > 0 {
		return n, fmt.Errorf("the signing secrets of %d webhook subscription(s) are sealed with a key neither "+
			"WEBHOOK_SECRET_KEY nor WEBHOOK_SECRET_DECRYPTION_KEYS holds: %s", len(unknown), strings.Join(unknown, ", "))
	}
	return n, nil
}

// needsSealing reports a document with a plain secret, or one sealed with
// another key than the current one (with no key: any sealed one, which
// cannot be opened).
func (st *Store) needsSealing(d doc) bool {
	if st.keys == nil {
		return d.SealedSecret != "" || d.SealedPreviousSecret != ""
	}
	if d.Secret != "" || d.PreviousSecret != "" {
		return true
	}
	for _, sealed := range []string{d.SealedSecret, d.SealedPreviousSecret} {
		if id, err := keyring.KeyID(sealed); sealed != "" && (err != nil || id != st.keys.CurrentID()) {
			return true
		}
	}
	return false
}

// missingKey is the id of the key that sealed a secret of d and that the
// keyring does not hold.
func (st *Store) missingKey(d doc) string {
	for _, sealed := range []string{d.SealedSecret, d.SealedPreviousSecret} {
		if id, err := keyring.KeyID(sealed); err == nil && (st.keys == nil || !st.keys.Holds(id)) {
			return id
		}
	}
	return "?"
}
