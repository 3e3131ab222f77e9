package changes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/events"
)

func TestPublicSeesOnlyWhatIsPublic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		subject, data string
		public        bool
	}{
		{events.DocumentCreated, `{"documentId":"d","version":1,"seq":3,"actor":"alice","public":{"id":"d"}}`, true},
		{events.DocumentCreated, `{"documentId":"d","version":1,"seq":3,"actor":"alice"}`, false}, // a draft
		{events.DocumentUpdated, `{"documentId":"d","public":null}`, false},
		{events.DocumentDraftSaved, `{"documentId":"d","public":{"id":"d"}}`, false}, // the app sees nothing new
		{events.DocumentScheduled, `{"documentId":"d"}`, false},
		{events.DocumentPublished, `{"documentId":"d","version":2,"public":{"id":"d"}}`, true},
		{events.DocumentUnpublished, `{"documentId":"d","version":3}`, true},
		{events.DocumentDeleted, `{"documentId":"d","wasPublic":true}`, true},
		{events.DocumentDeleted, `{"documentId":"d"}`, false}, // a draft deleted
		{events.DocumentPurged, `{"documentId":"d"}`, false},
		{events.DocumentRestored, `{"documentId":"d","public":{"id":"d"}}`, true},
		{events.TagCreated, `{"tagId":"t","categoryId":"c","name":"T","actor":"alice"}`, true},
		{events.CategoryDeleted, `{"categoryId":"c","tagsIds":[]}`, true},
		{events.ConfigChanged, `{"moderatorEmail":"m@example.org","actor":"alice"}`, true},
		{events.MediaUploaded, `{"mediaId":"m"}`, false},
		{events.MediaDeleted, `{"mediaId":"m"}`, false},
		{"library.other.thing", `{}`, false},
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, c := range cases {
		e := events.Envelope{ID: "e1", Type: c.subject, Time: at, Data: json.RawMessage(c.data)}
		m, ok := Public.Of(7, e)
		if ok != c.public {
			t.Errorf("%s %s: on the public stream %v, want %v", c.subject, c.data, ok, c.public)
		}
		if ok && (strings.Contains(string(m.Data.Payload), "actor") || strings.Contains(string(m.Data.Payload), "wasPublic")) {
			t.Errorf("%s: the app is told %s, want no actor", c.subject, m.Data.Payload)
		}
		if _, ok := BackOffice.Of(7, e); ok == (c.subject == "library.other.thing") {
			t.Errorf("%s: on the back-office stream %v", c.subject, ok)
		}
	}
}

func TestFrame(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m, ok := BackOffice.Of(42, events.Envelope{ID: "e1", Type: events.TagRenamed, Time: at,
		Data: json.RawMessage(`{"tagId":"t","categoryId":"c","name":"line\nbreak","actor":"alice"}`)})
	if !ok {
		t.Fatal("a tag renamed is not on the back-office stream")
	}
	b, err := m.frame()
	if err != nil {
		t.Fatal(err)
	}
	want := "id: 42\nevent: tag.renamed\ndata: {\"type\":\"tag.renamed\",\"eventId\":\"e1\",\"time\":\"2026-11-22T10:00:00.000Z\"," +
		"\"data\":{\"tagId\":\"t\",\"categoryId\":\"c\",\"name\":\"line\\nbreak\",\"actor\":\"alice\"},\"sync\":true}\n\n"
	if string(b) != want {
		t.Errorf("frame:\n%q\nwant\n%q", b, want)
	}
	for _, s := range Public.Subjects() {
		if !publicTypes[s] {
			t.Errorf("the public stream reads %s", s)
		}
	}
}
