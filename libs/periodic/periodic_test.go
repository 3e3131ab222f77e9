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

// Until retries a failing job with growing waits, logs the first failure
// and the success, then stops; stop before success ends the retries.
func TestUntilRetriesUntilSuccess(t *testing.T) {
	var logs testkit.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var runs atomic.Int32
	done, stop := periodic.Until(context.Background(), log, "bucket", func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a run without a deadline")
		}
		if runs.Add(1) < 3 {
			return errors.New("storage down")
		}
		return nil
	})
	defer stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("not done after 10 s and %d runs", runs.Load())
	}
	stop()
	out := logs.String()
	if runs.Load() != 3 || strings.Count(out, "bucket failed") != 1 || !strings.Contains(out, "bucket done") {
		t.Errorf("runs %d, logs:\n%s\nwant 3 runs, the first failure and the success logged once", runs.Load(), out)
	}

	done, stop = periodic.Until(context.Background(), log, "never", func(context.Context) error { return errors.New("down") })
	stop()
	select {
	case <-done:
		t.Error("done after stop without a success")
	default:
	}
}
