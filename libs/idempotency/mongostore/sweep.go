package mongostore

import (
	"context"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// KeySweep takes expired stamps off records (Expired, Unstamp), so that
// keys do not stay for ever, nor a lowered retention wait for their
// stored expiry. It runs at most once an Every per value (per replica),
// though its caller may run every few seconds: the filter is on no _id,
// and the test database (FerretDB) reads the whole collection for it; a
// key expired stays on an Every longer at most, which Made and Unstamped
// already read as expired.
type KeySweep struct {
	Every time.Duration
	last  atomic.Int64 // when Run last swept here (unix ns)
}

// Run takes the stamps expired at now off the records of colls that also
// match filter (nil: every record), unless it swept within Every.
func (k *KeySweep) Run(ctx context.Context, now time.Time, filter bson.M, colls ...*mongo.Collection) error {
	last := k.last.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < k.Every {
		return nil
	}
	if !k.last.CompareAndSwap(last, now.UnixNano()) {
		return nil // another call of this replica is sweeping
	}
	expired := Expired(now)
	for f, v := range filter {
		expired[f] = v
	}
	for _, coll := range colls {
		if _, err := coll.UpdateMany(ctx, expired, Unstamp()); err != nil {
			k.last.CompareAndSwap(now.UnixNano(), last) // the next call tries again
			return err
		}
	}
	return nil
}
