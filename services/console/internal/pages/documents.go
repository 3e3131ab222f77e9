package pages

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/filter"
)

// row is one document of the list with what the browser filters on,
// flat and ready to print: the template reads plain fields of it a
// thousand times (an embedded struct's fields cost reflection a search).
type row struct {
	ID, Title, Type string
	Draft, Deleted  bool
	TagsAttr        string   // the tag ids, space-separated (data-tags)
	TagNames        []string // shown as chips
	Text            string   // the folded title and tag names (data-text)
	Badges          []badge  // its states
	ChangedAt       string   // when it was changed last, or deleted (RFC 3339)
	ChangedBy       string   // who did
	Hidden          bool     // not matched by the criteria the page was asked with
}

type documentsData struct {
	Categories []boclient.Category
	Rows       []row
	RowsHTML   template.HTML // Rows rendered (listcache.go)
	Criteria   filter.Criteria
	Shown      int
	Total      int
	// Undo are the documents just deleted, which the notice offers to
	// restore.
	Undo []string
}

// documents lists every document; the criteria of the query (tag, q,
// deleted) hide the rows they do not match, so the page works without
// its script, which then filters the same rows as the person types.
func (p *Pages) documents(c *gin.Context) {
	s, _ := current(c)
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	crit := filter.Criteria{TagIDs: c.QueryArray("tag"), Text: c.Query("q"), Deleted: c.Query("deleted") == "1"}
	data, err := p.pageData(ctx, s.Token, s.CanEdit(), crit)
	if err != nil {
		p.fail(c, err)
		return
	}
	if c.Query("done") == "deleted" {
		data.Undo = c.QueryArray("undo")
	}
	notice := done(c.Query("done"))
	if n, err := strconv.Atoi(c.Query("n")); err == nil {
		same, _ := strconv.Atoi(c.Query("same"))
		notice = doneMany(c.Query("done"), n, same)
	}
	p.render(c, http.StatusOK, "documents", view{Title: "Documents", Notice: notice, Data: data})
}

// listing builds the rows of docs.
// states says a document's pending changes and scheduled publication.
func listing(cats []boclient.Category, docs []boclient.DocumentShort, crit filter.Criteria,
	states func(boclient.DocumentShort) (bool, string)) documentsData {
	ix := filter.NewIndex()
	tags := map[string]boclient.Tag{}
	for _, cat := range cats {
		for _, t := range cat.Tags {
			ix.Add(t.ID, t.Name, cat.ID)
			tags[t.ID] = t
		}
	}
	rule := ix.Prepare(crit)
	data := documentsData{Categories: cats, Criteria: crit, Rows: make([]row, 0, len(docs)), Total: len(docs)}
	for _, d := range docs {
		fd := filter.Doc{Title: d.Title, TagIDs: d.TagIDs, IsDeleted: d.IsDeleted}
		pending, publishAt := states(d)
		r := row{ID: d.ID, Title: d.Title, Type: d.Type, Draft: d.Status == "draft", Deleted: d.IsDeleted,
			TagsAttr: strings.Join(d.TagIDs, " "), Text: rule.Haystack(fd), Hidden: !rule.Match(fd),
			ChangedAt: d.UpdatedAt, ChangedBy: d.UpdatedBy, Badges: badgesOf(d.Status, d.IsDeleted, pending, publishAt)}
		if d.IsDeleted {
			r.ChangedAt, r.ChangedBy = d.DeletedAt, d.DeletedBy
		}
		for _, id := range d.TagIDs {
			if t, ok := tags[id]; ok {
				r.TagNames = append(r.TagNames, t.Name)
			}
		}
		if !r.Hidden {
			data.Shown++
		}
		data.Rows = append(data.Rows, r)
	}
	return data
}

// done says what the last write did.
func done(what string) string {
	switch what {
	case "deleted":
		return "The document was deleted. Undo restores it; it is also in the deleted documents."
	case "restored":
		return "The document was restored."
	case "none-selected":
		return "Nothing was done: tick one or more documents first."
	case "created":
		return "The document was created."
	case "saved":
		return "The document was saved. The app shows it as saved."
	case "draft-created":
		return "The document was saved as a draft. The app does not show it until it is published."
	case "draft-saved":
		return "The draft was saved. The app does not show it until it is published."
	case "pending-saved":
		return "Your changes were saved as pending changes. The app still shows the live version until they are published."
	case "scheduled":
		return "The document was saved and scheduled: it will be published at the time shown."
	case "published":
		return "The document was published. The app shows it now."
	case "unpublished":
		return "The document was unpublished: it is a draft again, and the app no longer shows it."
	case "discarded":
		return "The pending changes were discarded. The live version is unchanged."
	case "reverted":
		return "The earlier version was restored: it is the document's content now, as a new version."
	case "reverted-dropped":
		return "The earlier version was restored as a new version, without the tags, images or pinned documents it named that no longer exist."
	}
	return ""
}

// doneMany says what an action on several documents did: n changed, same
// left as they were (nothing to do).
func doneMany(what string, n, same int) string {
	docs, them := strconv.Itoa(n)+" documents were", "them"
	if n == 1 {
		docs, them = "1 document was", "it"
	}
	var s string
	switch what {
	case "deleted":
		return docs + " deleted. Undo restores " + them + "; the deleted documents list has " + them + " too."
	case "restored":
		s = docs + " restored."
	case "published":
		s = docs + " published."
	case "tagged":
		s = "The tag was added: " + docs + " changed."
	case "untagged":
		s = "The tag was removed: " + docs + " changed."
	default:
		return done(what)
	}
	switch {
	case same == 1:
		s += " 1 other had nothing to change."
	case same > 1:
		s += " " + strconv.Itoa(same) + " others had nothing to change."
	}
	return s
}

// fail shows an API error as a page.
func (p *Pages) fail(c *gin.Context, err error) {
	e := boclient.AsAPIError(err)
	if e.Status == http.StatusUnauthorized {
		c.Redirect(http.StatusSeeOther, Base+"/sign-in?why=expired")
		return
	}
	p.render(c, status(e), "error", view{Title: "Something went wrong", Error: e})
}

func (p *Pages) deleteDocument(c *gin.Context) {
	p.documentAction(c, "deleted", func(ctx context.Context, token, id string) error {
		return p.cfg.API.DeleteDocument(ctx, token, id)
	})
}

func (p *Pages) restoreDocument(c *gin.Context) {
	p.documentAction(c, "restored", func(ctx context.Context, token, id string) error {
		return p.cfg.API.RestoreDocument(ctx, token, id)
	})
}

// documentAction runs a one-click write and goes back to the list with
// the filters the person had.
func (p *Pages) documentAction(c *gin.Context, what string, act func(ctx context.Context, token, id string) error) {
	s, ctx, cancel, ok := p.writing(c)
	if !ok {
		return
	}
	defer cancel()
	if err := act(ctx, s.Token, c.Param("id")); err != nil {
		p.fail(c, err)
		return
	}
	back := url.Values{"done": {what}}
	if what == "deleted" {
		back.Set("undo", c.Param("id"))
	}
	c.Redirect(http.StatusSeeOther, Base+"/?"+back.Encode())
}
