package pages

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/revision"
)

// historyPage is how many revisions the history page lists at once (read
// with their documents, to say what each changed).
const historyPage = 20

// historyRow is one write of a document: who, when, why, and what it
// changed (nil when unknown or for the first revision).
type historyRow struct {
	boclient.RevisionShort
	Reason  string
	Changes []string
	// Live marks the version whose content the app shows now.
	Live bool
}

type historyData struct {
	ID, Title string
	// Draft says no version is live (the document is a draft).
	Draft      bool
	Rows       []historyRow
	NextBefore int64 // the before= of the next, older page; 0 on the last
}

// revisionsPage lists a document's revisions, newest first.
func (p *Pages) revisionsPage(c *gin.Context) {
	s, _ := current(c)
	id := c.Param("id")
	before, _ := strconv.ParseInt(c.Query("before"), 10, 64)
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	doc, _, err := p.cfg.API.Document(ctx, s.Token, id)
	if err != nil {
		p.fail(c, err)
		return
	}
	// One more than shown, each with its document (one request): the
	// revision before the oldest shown says what that one changed.
	revs, err := p.cfg.API.RevisionsFull(ctx, s.Token, id, before, historyPage+1)
	if err != nil {
		p.fail(c, err)
		return
	}
	d := historyData{ID: id, Title: doc.Title, Rows: history(revs), Draft: doc.Status == "draft"}
	if !d.Draft && !doc.IsDeleted {
		markLive(d.Rows, revs, before == 0)
	}
	if len(revs) > historyPage {
		d.NextBefore = revs[historyPage-1].Version
	}
	p.render(c, http.StatusOK, "revisions", view{Title: "History of " + doc.Title, Data: d})
}

// history makes the rows of revs (newest first, one more than shown): each
// row's changes compare it with the next, older revision.
func history(revs []boclient.Revision) []historyRow {
	rows := make([]historyRow, 0, historyPage)
	for i, r := range revs[:min(len(revs), historyPage)] {
		row := historyRow{RevisionShort: r.RevisionShort, Reason: revision.Reason(r.Why)}
		if i+1 < len(revs) {
			row.Changes = revision.Changes(revs[i+1].Raw, r.Raw)
		}
		rows = append(rows, row)
	}
	return rows
}

// markLive marks the row of the version the app shows: the oldest of the
// newest revisions whose live content is the document's now (later writes
// that left it alone, pending changes for one, are not it). Only on the
// first page (newest) can it be known from the revisions shown; when every
// shown revision has the same live content, the oldest shown is marked.
func markLive(rows []historyRow, revs []boclient.Revision, newest bool) {
	if !newest || len(rows) == 0 {
		return
	}
	live := 0
	for i := 0; i+1 < len(revs) && i+1 < len(rows); i++ {
		if liveContent(revs[i].Raw) != liveContent(revs[i+1].Raw) {
			break
		}
		live = i + 1
	}
	rows[live].Live = true
}

// liveContent is a revision's live content fields and status, as one
// comparable value.
func liveContent(raw []byte) string {
	var d boclient.Document
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	key, _ := json.Marshal([]any{d.Status, d.Title, d.URL, d.TagIDs, d.Content, d.Sources, d.ImageIDs, d.File, d.RelatedIDs})
	return string(key)
}

var noSuchRevision = &boclient.APIError{Status: http.StatusNotFound, Code: "revision_not_found", Detail: "There is no such version of this document."}

type revisionData struct {
	ID  string
	Rev boclient.Revision
	// ETag is the document's version as this page showed it: the restore
	// sends it (If-Match), so it never discards a save made since, and a
	// second press of the button restores nothing twice.
	ETag string
	// Tags are the names of the revision's tags that still exist.
	Tags   []string
	Reason string
	// Gone is what the version names that no longer exists.
	Gone *gone
}

// gone are a revision's references that no longer exist: a restore leaves
// them out, and a PDF whose file is gone cannot be restored at all.
type gone struct {
	Tags, Images, Pins []string // ids
	File               bool
}

// Any reports whether anything is gone.
func (g gone) Any() bool { return len(g.Tags)+len(g.Images)+len(g.Pins) > 0 || g.File }

// goneOf compares doc's references with what the library holds now (the
// edit page's choices); nil when that cannot be read.
func (p *Pages) goneOf(ctx context.Context, token string, doc boclient.Document) (*gone, []boclient.Category) {
	d := editData{Form: form{ID: doc.ID}}
	if err := p.choices(ctx, token, &d); err != nil {
		return nil, nil
	}
	var tags, images, pins, pdfs []string
	for _, c := range d.Categories {
		for _, t := range c.Tags {
			tags = append(tags, t.ID)
		}
	}
	for _, m := range d.Images {
		images = append(images, m.ID)
	}
	for _, m := range d.PDFs {
		pdfs = append(pdfs, m.ID)
	}
	for _, o := range d.Others {
		pins = append(pins, o.ID)
	}
	g := &gone{Tags: missing(doc.TagIDs, tags), Images: missing(doc.ImageIDs, images), Pins: missing(doc.RelatedIDs, pins),
		File: doc.File != nil && !slices.Contains(pdfs, doc.File.ID)}
	return g, d.Categories
}

// missing are the ids not in have.
func missing(ids, have []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(have, id) {
			out = append(out, id)
		}
	}
	return out
}

// revisionPage shows a document as it was after one write, with a button
// that makes it the current content again (editors).
func (p *Pages) revisionPage(c *gin.Context) {
	s, _ := current(c)
	id, rev, ok := revParam(c)
	if !ok {
		p.fail(c, noSuchRevision)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	r, err := p.cfg.API.Revision(ctx, s.Token, id, rev)
	if err != nil {
		p.fail(c, err)
		return
	}
	_, etag, err := p.cfg.API.Document(ctx, s.Token, id)
	if err != nil {
		p.fail(c, err)
		return
	}
	d := revisionData{ID: id, Rev: r, Reason: revision.Reason(r.Why), ETag: etag}
	g, cats := p.goneOf(ctx, s.Token, r.Document)
	d.Gone, d.Tags = g, tagNames(cats, r.Document.TagIDs)
	p.render(c, http.StatusOK, "revision", view{Title: "Version " + strconv.FormatInt(rev, 10) + " of " + r.Document.Title, Data: d})
}

// revParam is the document id and the revision number of the path.
func revParam(c *gin.Context) (string, int64, bool) {
	rev, err := strconv.ParseInt(c.Param("rev"), 10, 64)
	return c.Param("id"), rev, err == nil && rev >= 1
}

// tagNames are the names of ids among cats' tags, in cats' order.
func tagNames(cats []boclient.Category, ids []string) []string {
	var out []string
	for _, cat := range cats {
		for _, t := range cat.Tags {
			if slices.Contains(ids, t.ID) {
				out = append(out, cat.Name+": "+t.Name)
			}
		}
	}
	return out
}

// staleRestore is a restore sent from a page older than the document: a
// save since, or this very restore sent twice.
var staleRestore = &boclient.APIError{Status: http.StatusPreconditionFailed, Code: "precondition_failed",
	Detail: "The document changed after this version's page was opened (someone saved it, or this restore was already sent), " +
		"so nothing was restored. Open the history again to see the document as it is now, then restore if you still want to."}

// restoreRevision makes a revision the document's current content; the
// edit page then says so, and whether references that no longer hold
// were left out.
func (p *Pages) restoreRevision(c *gin.Context) {
	s, ok := current(c)
	if !ok {
		p.render(c, http.StatusUnauthorized, "error", view{Title: "Session ended", Error: sessionEnded})
		return
	}
	id, rev, ok := revParam(c)
	if !ok {
		p.fail(c, noSuchRevision)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	etag := c.PostForm("etag")
	if etag == "" {
		p.fail(c, staleRestore)
		return
	}
	dropped, err := p.cfg.API.RestoreRevision(ctx, s.Token, id, rev, etag)
	if e := boclient.AsAPIError(err); err != nil && e.Status == http.StatusPreconditionFailed {
		p.fail(c, staleRestore)
		return
	} else if err != nil {
		p.fail(c, explain(e))
		return
	}
	what := "reverted"
	if dropped.Any() {
		what = "reverted-dropped"
	}
	c.Redirect(http.StatusSeeOther, Base+"/documents/"+url.PathEscape(id)+"?"+url.Values{"done": {what}}.Encode())
}
