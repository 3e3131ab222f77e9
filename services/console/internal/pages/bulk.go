package pages

// Actions on several documents at once: the documents list is a form
// with a checkbox per row (it works without script), and the same
// actions serve one document (its row's Delete link). A deletion is
// confirmed on a page that names the documents first, and the list's
// notice offers to undo it (a restore of the same documents).

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
)

// The bulk actions.
const (
	bulkDelete    = "delete"
	bulkRestore   = "restore"
	bulkPublish   = "publish"
	bulkTagAdd    = "tag-add"
	bulkTagRemove = "tag-remove"
)

// bulkDone are the notices of the actions (the done parameter of the
// list).
var bulkDone = map[string]string{bulkDelete: "deleted", bulkRestore: "restored", bulkPublish: "published",
	bulkTagAdd: "tagged", bulkTagRemove: "untagged"}

// maxBulk is the most documents one action takes (the form's size).
const maxBulk = 1000

// bulkFailure is a document an action could not change, and why.
type bulkFailure struct {
	ID, Title, Reason string
}

// bulkData is the confirmation of a deletion, or the outcome of an action
// some documents refused.
type bulkData struct {
	Action   string
	Docs     []boclient.DocumentShort
	Failures []bulkFailure
	Changed  int
}

// confirmDeleteDocument is the confirmation page of a row's Delete link.
func (p *Pages) confirmDeleteDocument(c *gin.Context) {
	s, _ := current(c)
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	p.confirmBulkDelete(c, ctx, s.Token, []string{c.Param("id")})
}

// confirmBulkDelete names the documents ids before they are deleted.
func (p *Pages) confirmBulkDelete(c *gin.Context, ctx context.Context, token string, ids []string) {
	docs, err := p.titled(ctx, token, ids)
	if err != nil {
		p.fail(c, err)
		return
	}
	if len(docs) == 0 {
		p.fail(c, &boclient.APIError{Status: http.StatusNotFound, Code: "not_found", Detail: "There is no such document (any more)."})
		return
	}
	title := "Delete " + strconv.Itoa(len(docs)) + " documents?"
	if len(docs) == 1 {
		title = "Delete " + docs[0].Title + "?"
	}
	p.render(c, http.StatusOK, "bulk", view{Title: title, Data: bulkData{Action: bulkDelete, Docs: docs}})
}

// titled are the documents of the listing named by ids, in the listing's
// order.
func (p *Pages) titled(ctx context.Context, token string, ids []string) ([]boclient.DocumentShort, error) {
	all, err := p.cfg.API.Documents(ctx, token)
	if err != nil {
		return nil, err
	}
	var out []boclient.DocumentShort
	for _, d := range all {
		if slices.Contains(ids, d.ID) {
			out = append(out, d)
		}
	}
	return out, nil
}

// bulk runs the action posted on the documents checked.
func (p *Pages) bulk(c *gin.Context) {
	s, ctx, cancel, ok := p.writing(c)
	if !ok {
		return
	}
	defer cancel()
	ids, action, tag := c.PostFormArray("id"), c.PostForm("action"), c.PostForm("tag")
	switch {
	case len(ids) == 0:
		c.Redirect(http.StatusSeeOther, Base+"/?done=none-selected")
		return
	case len(ids) > maxBulk:
		ids = ids[:maxBulk]
	}
	if _, known := bulkDone[action]; !known {
		p.fail(c, &boclient.APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Detail: "Choose what to do with the selected documents."})
		return
	}
	if (action == bulkTagAdd || action == bulkTagRemove) && tag == "" {
		p.fail(c, &boclient.APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Detail: "Choose the tag to add or remove."})
		return
	}
	if action == bulkDelete && c.PostForm("confirmed") == "" {
		p.confirmBulkDelete(c, ctx, s.Token, ids)
		return
	}
	changed, failures := p.runBulk(ctx, s.Token, action, tag, ids)
	if len(failures) > 0 {
		if e := failures[0].err; e.Status == http.StatusUnauthorized {
			p.fail(c, e)
			return
		}
		p.showFailures(c, ctx, s.Token, action, changed, failures)
		return
	}
	back := url.Values{"done": {bulkDone[action]}, "n": {strconv.Itoa(changed)}, "same": {strconv.Itoa(len(ids) - changed)}}
	if action == bulkDelete {
		back["undo"] = ids
	}
	c.Redirect(http.StatusSeeOther, Base+"/?"+back.Encode())
}

// failed is a document an action refused.
type failed struct {
	id  string
	err *boclient.APIError
}

// runBulk applies action to each document, one after the other, and says
// how many it changed and which refused. A document the action leaves as
// it is (a tag it has already) counts as neither.
func (p *Pages) runBulk(ctx context.Context, token, action, tag string, ids []string) (int, []failed) {
	changed := 0
	var out []failed
	for _, id := range ids {
		did, err := p.bulkOne(ctx, token, action, tag, id)
		if err != nil {
			e := explain(boclient.AsAPIError(err))
			out = append(out, failed{id: id, err: e})
			if e.Status == http.StatusUnauthorized || ctx.Err() != nil {
				break
			}
			continue
		}
		if did {
			changed++
		}
	}
	return changed, out
}

// bulkOne applies action to document id; did is false when it had nothing
// to do.
func (p *Pages) bulkOne(ctx context.Context, token, action, tag, id string) (did bool, err error) {
	switch action {
	case bulkDelete:
		return true, p.cfg.API.DeleteDocument(ctx, token, id)
	case bulkRestore:
		return true, p.cfg.API.RestoreDocument(ctx, token, id)
	}
	doc, etag, err := p.cfg.API.Document(ctx, token, id)
	if err != nil {
		return false, err
	}
	if action == bulkPublish {
		if doc.Status == "published" && doc.Draft == nil {
			return false, nil
		}
		_, err := p.cfg.API.PublishDocument(ctx, token, id, etag)
		return err == nil, err
	}
	in, ok := retagged(doc, tag, action == bulkTagAdd)
	if !ok {
		return false, nil
	}
	_, _, err = p.cfg.API.UpdateDocument(ctx, token, id, etag, in)
	return err == nil, err
}

// retagged is the update that adds tag to doc (or removes it), where an
// editor's save would go: its pending changes when it has some (never its
// live version, which their publication would overwrite), its schedule
// kept. ok is false when doc already is as asked.
func retagged(doc boclient.Document, tag string, add bool) (boclient.DocumentInput, bool) {
	f := formOf(doc, "")
	has := slices.Contains(f.TagIDs, tag)
	if has == add {
		return boclient.DocumentInput{}, false
	}
	if add {
		f.TagIDs = append(slices.Clone(f.TagIDs), tag)
	} else {
		f.TagIDs = slices.DeleteFunc(slices.Clone(f.TagIDs), func(t string) bool { return t == tag })
	}
	in := f.input()
	in.Draft = f.Mode == modePending
	in.UnpublishAt = doc.UnpublishAt
	if f.Mode == modePending || f.Mode == modeDraft {
		in.PublishAt = doc.PublishAt
	}
	return in, true
}

// showFailures says which documents an action did not change, and why.
func (p *Pages) showFailures(c *gin.Context, ctx context.Context, token, action string, changed int, failures []failed) {
	ids := make([]string, len(failures))
	for i, f := range failures {
		ids[i] = f.id
	}
	docs, _ := p.titled(ctx, token, ids)
	d := bulkData{Action: action, Changed: changed}
	for _, f := range failures {
		bf := bulkFailure{ID: f.id, Title: f.id, Reason: f.err.Detail}
		if f.err.Status == http.StatusPreconditionFailed {
			bf.Reason = "It changed while the action ran; open it to see it, or try again."
		}
		for _, doc := range docs {
			if doc.ID == f.id {
				bf.Title = doc.Title
			}
		}
		d.Failures = append(d.Failures, bf)
	}
	p.render(c, status(failures[0].err), "bulk", view{Title: "Some documents were not changed", Data: d})
}
