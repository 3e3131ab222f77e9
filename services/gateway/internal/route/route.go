// Package route owns the gateway's route table: every method and path the
// gateway forwards, the upstream service that serves it, and what kind of
// request body it takes. Nothing outside this table is forwarded.
package route

import (
	"net/http"
	"strings"
)

// Upstream names a service behind the gateway.
type Upstream string

// The services behind the gateway.
const (
	Taxonomy Upstream = "taxonomy"
	Catalog  Upstream = "catalog"
	Media    Upstream = "media"
	Webhook  Upstream = "webhook"
	// Self marks the routes the gateway answers itself (GET /bo/me): no
	// service is behind them.
	Self Upstream = "gateway"
	// Changes marks the live streams of changes, which the gateway serves
	// itself from NATS JetStream.
	Changes Upstream = "changes"
)

// Upstreams lists every service behind the gateway (not Self).
func Upstreams() []Upstream { return []Upstream{Taxonomy, Catalog, Media, Webhook} }

// Kind says what request body a route takes, which decides the body rules
// the gateway enforces before forwarding.
type Kind int

const (
	// NoBody routes (reads, deletes, restore) expect no body; any body is
	// still capped at the JSON limit.
	NoBody Kind = iota
	// JSON routes take a JSON body of at most httpx.MaxJSONBody bytes.
	JSON
	// Upload routes take a multipart/form-data body up to the upload limit.
	Upload
	// ImportJSON routes (document imports) take a JSON body of at most
	// httpx.MaxImportJSONBody bytes: a document of the largest content
	// and draft exceeds the JSON limit.
	ImportJSON
)

func (k Kind) String() string {
	switch k {
	case JSON:
		return "json"
	case Upload:
		return "upload"
	case ImportJSON:
		return "import-json"
	default:
		return "no-body"
	}
}

// Route is one forwarded method and path, in Gin's pattern syntax. The
// upstream serves the same path.
type Route struct {
	Method   string
	Path     string
	Upstream Upstream
	Kind     Kind
}

// BackOffice reports whether the route needs credentials.
func (r Route) BackOffice() bool { return strings.HasPrefix(r.Path, "/bo/") }

// Public reports whether the route is open to the public app.
func (r Route) Public() bool { return strings.HasPrefix(r.Path, "/public/") }

// Read reports whether the route only reads (GET or HEAD).
func (r Route) Read() bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// safePosts are the table's routes that are not GET or HEAD and yet
// change nothing (safe, RFC 9110 §9.2.1): the document preview, a POST
// only because its text does not fit a URL. A viewer may send them, and
// they never make the micro-cache revalidate.
var safePosts = map[string]bool{"POST /bo/documents/preview": true}

// Safe reports whether the route changes nothing: a read, or one of
// safePosts.
func (r Route) Safe() bool { return r.Read() || safePosts[r.Method+" "+r.Path] }

// Writes reports whether the route may change the library.
func (r Route) Writes() bool { return !r.Safe() }

// MicroCached reports whether the gateway may answer the route from its
// micro-cache: the public JSON reads, the same bytes for every client who
// asks the same URL (the listing, asked at every start of the app, a
// detail, the tag categories, a media record, the public settings, a sync
// page), revalidated with the service's ETag. Downloads are streamed,
// never kept.
func (r Route) MicroCached() bool {
	if !r.Read() {
		return false
	}
	switch r.Path {
	case "/public/documents", "/public/documents/:id/detail", "/public/tags-categories", "/public/medias/:id", "/public/config",
		"/public/sync":
		return true
	}
	return false
}

// CacheQuery is the query parameter a micro-cached route's answers depend
// on, kept one per value ("" for the routes keyed by path alone).
//
// The sync feed (CONTRACT.md §8) is keyed by its cursor: every client that
// is up to date asks the same URL (the current cursor) until the library
// changes, and every first sync the same pages. A kept page never makes a
// client skip a change:
//
//   - A page is one answer of the catalog, kept whole: the cursor in it is
//     the one the catalog gave with its documents and removed ids.
//   - Whatever snapshot a catalog replica answers a cursor from, its page
//     holds every change after that cursor up to the snapshot's stable
//     point, and the page's own cursor is at most that point (or the
//     cursor asked with, from a replica still behind it). That holds
//     whenever the page is applied: a kept page served later is exactly a
//     page a replica answered that URL with, older than a fresh one, as a
//     lagging replica's would be, and every change after its cursor comes
//     in the pages asked after it. A change can come later (at most
//     PUBLIC_CACHE_TTL, or one revalidation, after the catalog has it),
//     never be skipped.
//   - Purges: the page's cursor carries its snapshot's horizon, so a
//     document purged after that snapshot makes the next cursor 410 (the
//     client starts again), as after a lagging replica's page.
//   - Tag categories: the cursor carries the fingerprint of the categories
//     the page told its client to hold (the cursor's own when it sent
//     none), so a kept page never leaves a client believing it holds
//     categories it was not sent.
//   - A back-office write through this gateway replica makes every kept
//     page revalidate first (Invalidate), as the listing does, so its
//     author's next sync has the write.
func (r Route) CacheQuery() string {
	if r.Path == "/public/sync" {
		return "cursor"
	}
	return ""
}

// Table returns every route of the contract (the base document plus
// POST /bo/documents/:id/restore), and HEAD beside every GET (CONTRACT.md
// §7: the same status and headers, no body).
func Table() []Route {
	var out []Route
	for _, r := range table() {
		out = append(out, r)
		if r.Method == http.MethodGet {
			r.Method = http.MethodHead
			out = append(out, r)
		}
	}
	return out
}

func table() []Route {
	return []Route{
		// the gateway itself: who the caller is
		{"GET", "/bo/me", Self, NoBody},
		// the gateway itself: the live streams of changes
		{"GET", "/public/changes", Changes, NoBody},
		{"GET", "/bo/changes", Changes, NoBody},

		// taxonomy
		{"GET", "/public/tags-categories", Taxonomy, NoBody},
		{"GET", "/bo/tags-categories", Taxonomy, NoBody},
		{"POST", "/bo/tags-categories", Taxonomy, JSON},
		{"PATCH", "/bo/tags-categories/:id", Taxonomy, JSON},
		{"DELETE", "/bo/tags-categories/:id", Taxonomy, NoBody},
		{"POST", "/bo/tags", Taxonomy, JSON},
		{"PATCH", "/bo/tags/:id", Taxonomy, JSON},
		{"DELETE", "/bo/tags/:id", Taxonomy, NoBody},
		// the public settings (taxonomy keeps them)
		{"GET", "/public/config", Taxonomy, NoBody},
		{"GET", "/bo/config", Taxonomy, NoBody},
		{"PUT", "/bo/config", Taxonomy, JSON},

		// catalog
		{"GET", "/public/documents", Catalog, NoBody},
		{"GET", "/public/documents/:id/detail", Catalog, NoBody},
		{"GET", "/public/documents/:id/download", Catalog, NoBody},
		{"GET", "/public/sync", Catalog, NoBody},
		// an app's offline use: its first start, a document's words
		{"GET", "/public/bundle", Catalog, NoBody},
		{"GET", "/public/documents/:id/text", Catalog, NoBody},
		{"GET", "/bo/documents", Catalog, NoBody},
		{"POST", "/bo/documents", Catalog, JSON},
		{"POST", "/bo/documents/preview", Catalog, JSON},
		{"PATCH", "/bo/documents/:id", Catalog, JSON},
		{"DELETE", "/bo/documents/:id", Catalog, NoBody},
		{"GET", "/bo/documents/:id/detail", Catalog, NoBody},
		{"GET", "/bo/documents/:id/download", Catalog, NoBody},
		{"POST", "/bo/documents/:id/restore", Catalog, NoBody},
		// the editorial workflow
		{"GET", "/bo/documents/:id/revisions", Catalog, NoBody},
		{"GET", "/bo/documents/:id/revisions/:rev", Catalog, NoBody},
		{"POST", "/bo/documents/:id/revisions/:rev/restore", Catalog, NoBody},
		{"POST", "/bo/documents/:id/publish", Catalog, NoBody},
		{"POST", "/bo/documents/:id/unpublish", Catalog, NoBody},
		{"DELETE", "/bo/documents/:id/draft", Catalog, NoBody},

		// media
		{"GET", "/public/medias/:id", Media, NoBody},
		{"GET", "/public/medias/:id/download", Media, NoBody},
		{"GET", "/public/medias/:id/text", Media, NoBody},
		{"GET", "/bo/medias", Media, NoBody},
		{"POST", "/bo/medias", Media, Upload},
		{"GET", "/bo/medias/:id", Media, NoBody},
		{"DELETE", "/bo/medias/:id", Media, NoBody},
		{"GET", "/bo/medias/:id/download", Media, NoBody},

		// webhook (secrets are only ever in the answers of the two writes
		// that make them, which a viewer may not send)
		{"GET", "/bo/webhooks", Webhook, NoBody},
		{"POST", "/bo/webhooks", Webhook, JSON},
		{"GET", "/bo/webhooks/:id", Webhook, NoBody},
		{"PATCH", "/bo/webhooks/:id", Webhook, JSON},
		{"DELETE", "/bo/webhooks/:id", Webhook, NoBody},
		{"POST", "/bo/webhooks/:id/rotate-secret", Webhook, NoBody},
		{"POST", "/bo/webhooks/:id/ping", Webhook, NoBody},
		{"GET", "/bo/webhooks/:id/deliveries", Webhook, NoBody},
		{"POST", "/bo/webhooks/:id/deliveries/:delivery/retry", Webhook, NoBody},
		{"GET", "/bo/webhook-event-types", Webhook, NoBody},

		// doclib import: records written back as an export read them
		{"PUT", "/bo/import/tags-categories/:id", Taxonomy, JSON},
		{"PUT", "/bo/import/tags/:id", Taxonomy, JSON},
		{"PUT", "/bo/import/config", Taxonomy, JSON},
		{"PUT", "/bo/import/documents/:id", Catalog, ImportJSON},
		{"PUT", "/bo/import/documents/:id/revisions/:rev", Catalog, ImportJSON},
		{"PUT", "/bo/import/documents/:id/entry", Catalog, ImportJSON},
		{"PUT", "/bo/import/medias/:id", Media, Upload},
	}
}
