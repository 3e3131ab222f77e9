package mongox

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// ErrNoTransactions is the start-up failure of a service whose MongoDB
// cannot run multi-document transactions: a standalone server. Every
// write of the services is a transaction.
var ErrNoTransactions = errors.New("MongoDB transactions are not available: production needs a replica set (one member is enough)")

// CheckTransactions asks the server of c whether it runs transactions (a
// replica set member or a mongos; the development database answers as a
// replica set's primary) and fails with ErrNoTransactions when it does
// not. An unreachable server fails as EnsureIndexes does.
func CheckTransactions(ctx context.Context, c *mongo.Client) error {
	var hello bson.Raw
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		return fmt.Errorf("mongodb (is MONGODB_URI reachable?): %w", err)
	}
	return transactionsIn(hello)
}

// transactionsIn reads a hello answer: transactions need a replica set
// (setName) or a mongos (msg "isdbgrid"), and sessions
// (logicalSessionTimeoutMinutes).
func transactionsIn(hello bson.Raw) error {
	setName, _ := hello.Lookup("setName").StringValueOK()
	msg, _ := hello.Lookup("msg").StringValueOK()
	if setName == "" && msg != "isdbgrid" {
		return ErrNoTransactions
	}
	if _, err := hello.LookupErr("logicalSessionTimeoutMinutes"); err != nil {
		return fmt.Errorf("%w (the server offers no sessions)", ErrNoTransactions)
	}
	return nil
}
