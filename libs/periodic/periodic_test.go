package periodic_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"log/slog"

	"github.com/doclib/libs/periodic"
	"github.com/doclib/libs/testkit"
)

func TestFailuresAreLoggedOncePerOutage(t *testing.T) {
	var logs testkit.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var runs atomic.Int32
	stop := periodic.Start(context.Background(), log, "sweep", 5*time.Millisecond, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a run without a deadline")
		}
		switch n := runs.Add(1); {
		case n <= 3:
			return errors.New("store down")
		case n == 4:
			return nil
		case n == 5:
			return errors.New("down again")
		default:
			return nil
		}
	})
	for runs.Load() < 7 {
		time.Sleep(time.Millisecond)
	}
	stop()
	out := logs.String()
	if n := strings.Count(out, "sweep failed"); n != 2 {
		t.Errorf("%d failure lines, want one per outage (2):\n%s", n, out)
	}
	if n := strings.Count(out, "sweep recovered"); n != 2 {
		t.Errorf("%d recovery lines, want 2:\n%s", n, out)
	}
}

func TestStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := periodic.Start(ctx, slog.New(slog.DiscardHandler), "job", time.Hour, func(context.Context) error {
		t.Error("ran before its interval")
		return nil
	})
	cancel()
	stop() // returns although the context had ended already
	periodic.Start(context.Background(), slog.New(slog.DiscardHandler), "job", time.Hour, func(context.Context) error { return nil })()
}
