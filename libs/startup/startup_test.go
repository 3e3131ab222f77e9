package startup

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/doclib/libs/config"
)

type failing struct{ err error }

func (f failing) EnsureIndexes(context.Context) error { return f.err }

func TestEnsureIndexesNamesTheDatabase(t *testing.T) {
	ctx := context.Background()
	if err := EnsureIndexes(ctx, failing{}, failing{}); err != nil {
		t.Fatalf("no failure: %v", err)
	}
	cause := errors.New("server selection timeout")
	err := EnsureIndexes(ctx, failing{}, failing{cause})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "MONGODB_URI") {
		t.Fatalf("error %v: want the cause, worded as the database out of reach", err)
	}
}

func TestBeginWithoutADatabase(t *testing.T) {
	p, err := Begin(context.Background(), "test", config.FromEnviron(), "error", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Log == nil || p.DB != nil {
		t.Fatalf("process %+v: want a logger and no database", p)
	}
	p.Stop()
}

func TestBeginRefusesABadURI(t *testing.T) {
	if _, err := Begin(context.Background(), "test", config.FromEnviron(), "error", "mongodb://%zz"); err == nil {
		t.Fatal("a URI that does not parse started")
	}
}
