package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// hooksOf returns the verified payloads rc got, in order, of the types
// listed.
func hooksOf(t *testing.T, rc *hookReceiver, secret string, types ...string) []payload {
	t.Helper()
	var out []payload
	for _, h := range rc.distinct() {
		if p := verify(t, secret, h); slices.Contains(types, p.Type) {
			out = append(out, p)
		}
	}
	return out
}

// TestWebhooksDeliverTaxonomyChanges: a subscription to tag.* gets a tag's
// creation and renaming within seconds, with the ids, the new name and who
// made it; category.* gets the category's.
func TestWebhooksDeliverTaxonomyChanges(t *testing.T) {
	st := NewStack(t, nil)
	tags, cats := newHookReceiver(t, nil), newHookReceiver(t, nil)
	ts := st.subscribe(tags.srv.URL, "tag.*")
	cs := st.subscribe(cats.srv.URL, "category.*", "config.changed")
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "live", "name": "Live"}, 201)
	st.Must("POST", "/bo/tags", map[string]string{"id": "live-t", "name": "Fresh", "categoryId": "live"}, 201)
	st.Must("PATCH", "/bo/tags/live-t", map[string]string{"name": "Renamed"}, 200)
	st.Must("PUT", "/bo/config", map[string]string{"moderatorEmail": "live@example.org"}, 200)

	Eventually(t, 10*time.Second, "tag.created and tag.renamed at the tag.* receiver", func() bool {
		return len(hooksOf(t, tags, ts.Secret, "tag.created", "tag.renamed")) >= 2
	})
	got := hooksOf(t, tags, ts.Secret, "tag.created", "tag.renamed")
	want := []struct{ typ, data string }{
		{"tag.created", fmt.Sprintf(`{"tagId":"live-t","categoryId":"live","name":"Fresh","actor":%q}`, TokenName)},
		{"tag.renamed", fmt.Sprintf(`{"tagId":"live-t","categoryId":"live","name":"Renamed","actor":%q}`, TokenName)},
	}
	for i, w := range want {
		if got[i].Type != w.typ || string(got[i].Data) != w.data || time.Since(got[i].Timestamp) > time.Minute {
			t.Errorf("webhook %d = %s %s at %v, want %s %s now", i, got[i].Type, got[i].Data, got[i].Timestamp, w.typ, w.data)
		}
	}
	Eventually(t, 10*time.Second, "category.created and config.changed at the other receiver", func() bool {
		return len(hooksOf(t, cats, cs.Secret, "category.created", "config.changed")) >= 2
	})
	if n := len(hooksOf(t, cats, cs.Secret, "tag.created", "tag.renamed")); n != 0 {
		t.Errorf("the category.* receiver got %d tag webhooks", n)
	}
}

// TestWebhooksDeliverDocumentChanges: a subscription to document.* gets a
// document's creation and its edit, each within seconds of its answer,
// about that document, with the change-sequence number and its author.
func TestWebhooksDeliverDocumentChanges(t *testing.T) {
	st := NewStack(t, nil)
	rc := newHookReceiver(t, nil)
	s := st.subscribe(rc.srv.URL, "document.*")
	var d struct{ ID string }
	created := time.Now()
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Live", "url": "https://example.org/live"}, 201).JSON(t, &d)
	Eventually(t, 5*time.Second, "document.created within seconds of the answer (the catalog publishes library.catalog.document.created)", func() bool {
		return len(hooksOf(t, rc, s.Secret, "document.created")) >= 1
	})
	edited := time.Now()
	st.Must("PATCH", "/bo/documents/"+d.ID, map[string]any{"type": "LINK", "title": "Live, edited", "url": "https://example.org/live"}, 200)
	edits := []string{"document.updated", "document.draft_saved"}
	Eventually(t, 5*time.Second, "the edit's webhook within seconds of the answer", func() bool {
		return len(hooksOf(t, rc, s.Secret, edits...)) >= 1
	})
	t.Logf("creation delivered %v after its request, the edit %v", rc.distinct()[0].At.Sub(created), time.Since(edited))
	var seq int64
	for _, p := range hooksOf(t, rc, s.Secret, append(edits, "document.created")...) {
		var data struct {
			DocumentID, Actor string
			Seq               int64
		}
		if err := json.Unmarshal(p.Data, &data); err != nil || data.DocumentID != d.ID || data.Actor != TokenName || data.Seq <= seq {
			t.Errorf("%s %s: want documentId %s, actor %s and a seq after %d", p.Type, p.Data, d.ID, TokenName, seq)
		}
		seq = data.Seq
	}
}

// liveStream is an open GET of a live stream, read from outside as curl -N
// would.
type liveStream struct {
	url    string
	res    *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

type liveMessage struct {
	ID    uint64
	Event string
	Data  struct {
		Type        string          `json:"type"`
		Data        json.RawMessage `json:"data"`
		Sync        bool            `json:"sync"`
		FromScratch bool            `json:"fromScratch"`
	}
}

func openStream(t *testing.T, url string, headers ...string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	testkit.Must(t, err, "request")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { cancel(); _ = res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %s, want 200 text/event-stream", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return &liveStream{url: url, res: res, r: bufio.NewReader(res.Body), cancel: cancel}
}

// next returns the next message, failing after 15 s without one.
func (s *liveStream) next(t *testing.T) liveMessage {
	t.Helper()
	timer := time.AfterFunc(15*time.Second, s.cancel)
	defer timer.Stop()
	var m liveMessage
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("no message on %s within 15 s: %v", s.url, err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && m.Event != "":
			return m
		case strings.HasPrefix(line, "id: "):
			m.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			m.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			testkit.Must(t, json.Unmarshal([]byte(line[6:]), &m.Data), "data of "+m.Event)
		}
	}
}

// TestLiveStreamsShowATagCreation: a tag created through the back-office
// shows on the public stream (without who made it) and on the back-office
// stream (with them), for a viewer too; /bo/changes needs credentials.
func TestLiveStreamsShowATagCreation(t *testing.T) {
	st := NewStack(t, nil)
	if r := st.ReqAt(st.AdminURL, "GET", "/bo/changes", nil); r.Status != 401 {
		t.Errorf("GET /bo/changes without credentials: %d, want 401", r.Status)
	}
	pub := openStream(t, st.URL+"/public/changes")
	bo := openStream(t, st.AdminURL+"/bo/changes", "Authorization", "Bearer "+ViewerToken)
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "sse", "name": "Live"}, 201)
	st.Must("POST", "/bo/tags", map[string]string{"id": "sse-t", "name": "Fresh", "categoryId": "sse"}, 201)
	for _, s := range []struct {
		name  string
		s     *liveStream
		actor bool
	}{{"public", pub, false}, {"back-office", bo, true}} {
		c, tg := s.s.next(t), s.s.next(t)
		if c.Event != "category.created" || tg.Event != "tag.created" || tg.ID <= c.ID || !tg.Data.Sync {
			t.Errorf("%s stream: %s #%d then %s #%d, want category.created then tag.created", s.name, c.Event, c.ID, tg.Event, tg.ID)
		}
		var d struct{ TagID, Name, Actor string }
		testkit.Must(t, json.Unmarshal(tg.Data.Data, &d), "tag data")
		if d.TagID != "sse-t" || d.Name != "Fresh" || (d.Actor == TokenName) != s.actor {
			t.Errorf("%s stream: tag.created says %s; want the tag, the actor only on the back-office", s.name, tg.Data.Data)
		}
	}
}

// TestLiveStreamResumesWithLastEventID: a client that reconnects with the
// last id it got receives exactly the changes made while it was away, then
// the next ones; an id from before the horizon (or unknown) is a reset.
func TestLiveStreamResumesWithLastEventID(t *testing.T) {
	st := NewStack(t, nil)
	s := openStream(t, st.URL+"/public/changes")
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "away", "name": "Away"}, 201)
	last := s.next(t)
	s.cancel()
	for _, id := range []string{"away-1", "away-2"} {
		st.Must("POST", "/bo/tags", map[string]string{"id": id, "name": id, "categoryId": "away"}, 201)
	}
	again := openStream(t, st.URL+"/public/changes", "Last-Event-ID", strconv.FormatUint(last.ID, 10))
	st.Must("PATCH", "/bo/tags/away-1", map[string]string{"name": "Back"}, 200)
	want := []string{"tag.created", "tag.created", "tag.renamed"}
	for i, w := range want {
		if m := again.next(t); m.Event != w || m.ID <= last.ID {
			t.Errorf("resumed message %d: %s #%d, want %s after #%d", i, m.Event, m.ID, w, last.ID)
		} else {
			last = m
		}
	}
	future := openStream(t, st.URL+"/public/changes", "Last-Event-ID", strconv.FormatUint(last.ID+1000, 10))
	if m := future.next(t); m.Event != "reset" || !m.Data.FromScratch || m.ID != last.ID {
		t.Errorf("a resume from an id the stream never had: %+v, want a reset at #%d", m, last.ID)
	}
	if r := st.ReqAt(st.URL, "GET", "/public/changes", nil, "Last-Event-ID", "garbage"); r.Status != 400 {
		t.Errorf("a Last-Event-ID that is not an id: %d, want 400", r.Status)
	}
}

// checkStreamStart opens a live stream, reads its opening lines (up to the
// first blank line) and has st.Check validate that answer, as Req does for
// answers that end.
func (st *Stack) checkStreamStart(t *testing.T, base, path string, headers ...string) {
	t.Helper()
	s := openStream(t, base+path, headers...)
	defer s.cancel()
	var head strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		testkit.Must(t, err, "read the opening of "+path)
		head.WriteString(line)
		if line == "\n" {
			break
		}
	}
	if st.Check != nil {
		st.Check.Check(t, s.res.Request, Response{Status: s.res.StatusCode, Header: s.res.Header, Body: []byte(head.String())})
	}
}

// TestLiveStreamShowsAPublication: the app, up to date with a cursor and
// following /public/changes, never sees a draft; the draft's publication
// comes as a message carrying the public detail, and /public/sync from the
// app's cursor then returns the document. An editor's draft saved on the
// back-office stream names the document.
func TestLiveStreamShowsAPublication(t *testing.T) {
	st := NewStack(t, nil)
	cursor := st.syncAll()
	pub := openStream(t, st.URL+"/public/changes")
	bo := openStream(t, st.AdminURL+"/bo/changes", "Authorization", "Bearer "+ViewerToken)
	var d struct{ ID string }
	st.Must("POST", "/bo/documents", `{"type":"LINK","title":"Bientôt","url":"https://example.org/soon","status":"draft"}`, 201).JSON(t, &d)
	if m := bo.next(t); m.Event != "document.created" || !strings.Contains(string(m.Data.Data), d.ID) {
		t.Errorf("back-office stream: %s %s, want document.created about %s (the catalog publishes it)", m.Event, m.Data.Data, d.ID)
	}
	st.Must("POST", "/bo/documents/"+d.ID+"/publish", nil, 200)
	m := pub.next(t) // the draft's creation must not come first
	var data struct {
		DocumentID string          `json:"documentId"`
		Public     json.RawMessage `json:"public"`
		Actor      string          `json:"actor"`
	}
	testkit.Must(t, json.Unmarshal(m.Data.Data, &data), "data")
	if m.Event != "document.published" || data.DocumentID != d.ID || len(data.Public) == 0 || data.Actor != "" || !m.Data.Sync {
		t.Fatalf("public stream: %s %s, want document.published about %s with its public detail and no actor", m.Event, m.Data.Data, d.ID)
	}
	page, r := st.sync(cursor)
	if r.Status != 200 || len(page.Documents) != 1 || page.Documents[0].ID != d.ID {
		t.Errorf("/public/sync from the app's cursor after the message: %d %s, want the published document", r.Status, r.Body)
	}
}
