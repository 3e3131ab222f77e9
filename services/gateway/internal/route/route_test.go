package route_test

import (
	"testing"

	"github.com/doclib/services/gateway/internal/route"
)

func TestTable(t *testing.T) {
	t.Parallel()
	tax, cat, med, wh := route.Taxonomy, route.Catalog, route.Media, route.Webhook
	want := []route.Route{
		{"GET", "/bo/me", route.Self, route.NoBody},
		{"GET", "/public/changes", route.Changes, route.NoBody},
		{"GET", "/bo/changes", route.Changes, route.NoBody},
		{"GET", "/public/tags-categories", tax, route.NoBody},
		{"GET", "/bo/tags-categories", tax, route.NoBody},
		{"POST", "/bo/tags-categories", tax, route.JSON},
		{"PATCH", "/bo/tags-categories/:id", tax, route.JSON},
		{"DELETE", "/bo/tags-categories/:id", tax, route.NoBody},
		{"POST", "/bo/tags", tax, route.JSON},
		{"PATCH", "/bo/tags/:id", tax, route.JSON},
		{"DELETE", "/bo/tags/:id", tax, route.NoBody},
		{"GET", "/public/config", tax, route.NoBody},
		{"GET", "/bo/config", tax, route.NoBody},
		{"PUT", "/bo/config", tax, route.JSON},
		{"GET", "/public/documents", cat, route.NoBody},
		{"GET", "/public/documents/:id/detail", cat, route.NoBody},
		{"GET", "/public/documents/:id/download", cat, route.NoBody},
		{"GET", "/public/sync", cat, route.NoBody},
		{"GET", "/public/bundle", cat, route.NoBody},
		{"GET", "/public/documents/:id/text", cat, route.NoBody},
		{"GET", "/bo/documents", cat, route.NoBody},
		{"POST", "/bo/documents", cat, route.JSON},
		{"POST", "/bo/documents/preview", cat, route.JSON},
		{"PATCH", "/bo/documents/:id", cat, route.JSON},
		{"DELETE", "/bo/documents/:id", cat, route.NoBody},
		{"GET", "/bo/documents/:id/detail", cat, route.NoBody},
		{"GET", "/bo/documents/:id/download", cat, route.NoBody},
		{"POST", "/bo/documents/:id/restore", cat, route.NoBody},
		{"GET", "/public/medias/:id", med, route.NoBody},
		{"GET", "/public/medias/:id/download", med, route.NoBody},
		{"GET", "/public/medias/:id/text", med, route.NoBody},
		{"GET", "/bo/medias", med, route.NoBody},
		{"POST", "/bo/medias", med, route.Upload},
		{"GET", "/bo/medias/:id", med, route.NoBody},
		{"DELETE", "/bo/medias/:id", med, route.NoBody},
		{"GET", "/bo/medias/:id/download", med, route.NoBody},
		// the editorial workflow (issue 24)
		{"GET", "/bo/documents/:id/revisions", cat, route.NoBody},
		{"GET", "/bo/documents/:id/revisions/:rev", cat, route.NoBody},
		{"POST", "/bo/documents/:id/revisions/:rev/restore", cat, route.NoBody},
		{"POST", "/bo/documents/:id/publish", cat, route.NoBody},
		{"POST", "/bo/documents/:id/unpublish", cat, route.NoBody},
		{"DELETE", "/bo/documents/:id/draft", cat, route.NoBody},
		{"GET", "/bo/webhooks", wh, route.NoBody},
		{"POST", "/bo/webhooks", wh, route.JSON},
		{"GET", "/bo/webhooks/:id", wh, route.NoBody},
		{"PATCH", "/bo/webhooks/:id", wh, route.JSON},
		{"DELETE", "/bo/webhooks/:id", wh, route.NoBody},
		{"POST", "/bo/webhooks/:id/rotate-secret", wh, route.NoBody},
		{"POST", "/bo/webhooks/:id/ping", wh, route.NoBody},
		{"GET", "/bo/webhooks/:id/deliveries", wh, route.NoBody},
		{"POST", "/bo/webhooks/:id/deliveries/:delivery/retry", wh, route.NoBody},
		{"GET", "/bo/webhook-event-types", wh, route.NoBody},
		{"PUT", "/bo/import/tags-categories/:id", tax, route.JSON},
		{"PUT", "/bo/import/tags/:id", tax, route.JSON},
		{"PUT", "/bo/import/config", tax, route.JSON},
		{"PUT", "/bo/import/documents/:id", cat, route.ImportJSON},
		{"PUT", "/bo/import/documents/:id/revisions/:rev", cat, route.ImportJSON},
		{"PUT", "/bo/import/documents/:id/entry", cat, route.ImportJSON},
		{"PUT", "/bo/import/medias/:id", med, route.Upload},
	}
	for _, w := range want { // every GET answers HEAD too
		if w.Method == "GET" {
			w.Method = "HEAD"
			want = append(want, w)
		}
	}

	got := map[string]route.Route{}
	for _, r := range route.Table() {
		key := r.Method + " " + r.Path
		if _, dup := got[key]; dup {
			t.Errorf("route %s is listed twice", key)
		}
		got[key] = r
		if r.Public() == r.BackOffice() {
			t.Errorf("route %s must be either public or back-office", key)
		}
	}
	for _, w := range want {
		key := w.Method + " " + w.Path
		g, ok := got[key]
		if !ok {
			t.Errorf("route %s is missing", key)
			continue
		}
		if g != w {
			t.Errorf("route %s: got upstream %s kind %s, want upstream %s kind %s", key, g.Upstream, g.Kind, w.Upstream, w.Kind)
		}
		delete(got, key)
	}
	for key := range got {
		t.Errorf("route %s is not in the contract", key)
	}
}

// The gateway micro-caches the public JSON reads, GET and HEAD alike, and
// nothing else (downloads stream, back-office reads must be current).
func TestMicroCached(t *testing.T) {
	t.Parallel()
	want := map[string]bool{
		"/public/documents": true, "/public/documents/:id/detail": true,
		"/public/tags-categories": true, "/public/medias/:id": true, "/public/config": true,
		"/public/sync": true,
	}
	seen := 0
	for _, r := range route.Table() {
		if r.MicroCached() != (r.Read() && want[r.Path]) {
			t.Errorf("%s %s: MicroCached = %v", r.Method, r.Path, r.MicroCached())
		}
		// Sync pages are kept one per cursor; every other answer depends
		// on its path alone.
		if q, wantQ := r.CacheQuery(), map[bool]string{true: "cursor"}[r.Path == "/public/sync"]; q != wantQ {
			t.Errorf("%s %s: CacheQuery = %q, want %q", r.Method, r.Path, q, wantQ)
		}
		if r.MicroCached() {
			seen++
		}
	}
	if seen != 2*len(want) {
		t.Errorf("%d micro-cached routes, want GET and HEAD of %d paths", seen, len(want))
	}
}

// Only routes that may change the library make the micro-cache revalidate;
// the others (reads, the document preview) are safe: a viewer may send them.
func TestWrites(t *testing.T) {
	t.Parallel()
	for _, r := range route.Table() {
		want := r.Method != "GET" && r.Method != "HEAD" && r.Path != "/bo/documents/preview"
		if r.Writes() != want || r.Safe() == want {
			t.Errorf("%s %s: Writes() = %v, want %v", r.Method, r.Path, r.Writes(), want)
		}
	}
}
