package delivery

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/services/webhook/internal/destination"
	"github.com/doclib/services/webhook/internal/signature"
	"github.com/doclib/services/webhook/internal/subscription"
)

// saveStore keeps what Save was given.
type saveStore struct {
	Store
	saved []Delivery
}

func (s *saveStore) Save(_ context.Context, d Delivery) error {
	s.saved = append(s.saved, d)
	return nil
}

// millis is a date as the API writes every one: UTC, three digits of
// milliseconds.
var millis = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// A test ping's body dates itself as events do, to the millisecond, and
// as the delivery log records it (it had nanoseconds).
func TestPingTimestampHasMilliseconds(t *testing.T) {
	t.Parallel()
	bodies := make(chan []byte, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	st := &saveStore{}
	sender := NewSender(destination.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
	d := NewDispatcher(st, oneSub{}, sender, Config{}, slog.New(slog.DiscardHandler))
	sub := subscription.Subscription{ID: "wh_1", URL: rcv.URL, EventTypes: []string{"*"}, Status: subscription.Active,
		Secret: signature.NewSecret()}
	dl, err := d.Ping(context.Background(), sub)
	if err != nil || dl.Status != Succeeded {
		t.Fatalf("ping: %+v, %v", dl, err)
	}
	var p struct{ Timestamp string }
	if err := json.Unmarshal(<-bodies, &p); err != nil {
		t.Fatal(err)
	}
	if !millis.MatchString(p.Timestamp) {
		t.Errorf("ping timestamp %q, want UTC with three digits of milliseconds", p.Timestamp)
	}
	if got, _ := time.Parse(time.RFC3339Nano, p.Timestamp); !got.Equal(dl.EventTime) {
		t.Errorf("ping timestamp %q, want the delivery's event time %s", p.Timestamp, dl.EventTime)
	}
}

// An event's body has the same form, even when its time ends in zeros.
func TestEventTimestampHasThreeDigits(t *testing.T) {
	t.Parallel()
	e := events.Envelope{ID: "e1", Type: "library.taxonomy.tag.deleted", Time: time.Date(2026, 11, 26, 23, 0, 0, 120e6, time.UTC),
		Data: json.RawMessage(`{}`)}
	ds, err := deliveries([]subscription.Subscription{{ID: "wh_1", EventTypes: []string{"*"}, Status: subscription.Active}},
		e, nil, time.Now())
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %v, %v", ds, err)
	}
	var p struct{ Timestamp string }
	if err := json.Unmarshal(ds[0].Body, &p); err != nil || p.Timestamp != "2026-11-26T23:00:00.120Z" {
		t.Errorf("event timestamp %q (%v), want 2026-11-26T23:00:00.120Z", p.Timestamp, err)
	}
}
