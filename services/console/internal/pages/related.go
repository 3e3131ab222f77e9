package pages

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/filter"
)

// The picker of pinned related documents: the documents pinned, ticked,
// and a search field whose matches come ticked off. Without script the
// search is the form sent back (Find, nothing saved); with script the page
// asks the console's related search as the person types.

// maxMatches is how many documents a search offers.
const maxMatches = 20

// Pinned are the documents the form pins, in its order (an id the listing
// does not know comes with its id as title).
func (d editData) Pinned() []boclient.DocumentShort {
	return inOrder(d.Form.RelatedIDs, d.Others, func(o boclient.DocumentShort) string { return o.ID },
		func(id string) boclient.DocumentShort { return boclient.DocumentShort{ID: id, Title: id} })
}

// Matches are the live documents, other than this one and those pinned,
// whose title holds the form's search.
func (d editData) Matches() []boclient.DocumentShort {
	return matching(d.Others, d.Form.RelatedQuery, d.Form.RelatedIDs)
}

// matching are the documents of docs whose title holds q (folded as the
// list's search folds), except those of skip; at most maxMatches.
func matching(docs []boclient.DocumentShort, q string, skip []string) []boclient.DocumentShort {
	q = filter.Fold(q)
	if q == "" {
		return nil
	}
	var out []boclient.DocumentShort
	for _, o := range docs {
		if o.IsDeleted || slices.Contains(skip, o.ID) || !strings.Contains(filter.Fold(o.Title), q) {
			continue
		}
		if out = append(out, o); len(out) == maxMatches {
			break
		}
	}
	return out
}

// relatedMatch is one document a search offers to pin.
type relatedMatch struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// relatedSearch answers the edit page's script: the live documents whose
// title holds q, except the document being edited (not) and those pinned.
func (p *Pages) relatedSearch(c *gin.Context) {
	s, _ := current(c)
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	docs, err := p.cfg.API.Documents(ctx, s.Token)
	if err != nil {
		e := boclient.AsAPIError(err)
		c.JSON(status(e), gin.H{"error": explain(e).Detail})
		return
	}
	out := []relatedMatch{}
	for _, d := range matching(docs, c.Query("q"), append(c.QueryArray("pinned"), c.Query("not"))) {
		out = append(out, relatedMatch{ID: d.ID, Title: d.Title})
	}
	c.JSON(http.StatusOK, out)
}
