package pages

import (
	"bytes"
	"context"
	"html/template"
	"sync"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/filter"
)

// listCache keeps the documents page's rows, rendered, with the ETags of
// the listing and the categories they were made from: while the API
// answers 304 to both (asked with each person's own token, so the API
// still decides who may read), the page sends the rows it has instead of
// decoding 1,000 documents and rendering them again. Rows differ by role
// only (the edit buttons), so there is one entry per role; criteria in
// the query (the page without script) are rendered each time.
type listCache struct {
	mu      sync.Mutex
	entries map[bool]*listEntry // by CanEdit
}

type listEntry struct {
	catsETag, docsETag string
	cats               []boclient.Category
	docs               []boclient.DocumentShort
	rows               template.HTML // rendered without criteria
	shown              int
	states             uint64 // the generation of the states the rows show
}

func (lc *listCache) get(edit bool) listEntry {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if e := lc.entries[edit]; e != nil {
		return *e
	}
	return listEntry{}
}

func (lc *listCache) put(edit bool, e listEntry) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.entries == nil {
		lc.entries = map[bool]*listEntry{}
	}
	lc.entries[edit] = &e
}

// pageData is the documents page for token with crit, from the cache
// when the library has not changed.
func (p *Pages) pageData(ctx context.Context, token string, edit bool, crit filter.Criteria) (documentsData, error) {
	e := p.lists.get(edit)
	cats, catsETag, catsChanged, err := p.cfg.API.CategoriesIfChanged(ctx, token, e.catsETag)
	if err != nil {
		return documentsData{}, err
	}
	docs, docsETag, docsChanged, err := p.cfg.API.DocumentsIfChanged(ctx, token, e.docsETag)
	if err != nil {
		return documentsData{}, err
	}
	if !catsChanged {
		cats = e.cats
	}
	if !docsChanged {
		docs = e.docs
	}
	learning, stop := context.WithTimeout(ctx, p.cfg.Timeout/2) // what is left is the page's
	p.learnStates(learning, token, docs)
	stop()
	gen := p.states.generation()
	plain := len(crit.TagIDs) == 0 && crit.Text == "" && !crit.Deleted
	if plain && !catsChanged && !docsChanged && e.rows != "" && e.states == gen {
		return documentsData{Categories: cats, Criteria: crit, RowsHTML: e.rows, Shown: e.shown, Total: len(docs)}, nil
	}
	data := listing(cats, docs, crit, p.states.of)
	if data.RowsHTML, err = p.renderRows(data.Rows, edit); err != nil {
		return documentsData{}, err
	}
	if plain {
		p.lists.put(edit, listEntry{catsETag: catsETag, docsETag: docsETag, cats: cats, docs: docs, rows: data.RowsHTML, shown: data.Shown, states: gen})
	}
	return data, nil
}

// renderRows renders the table's rows (the "rows" block of documents.html).
func (p *Pages) renderRows(rows []row, edit bool) (template.HTML, error) {
	var buf bytes.Buffer
	err := p.pages["documents"].ExecuteTemplate(&buf, "rows", struct {
		Rows []row
		Edit bool
	}{rows, edit})
	return template.HTML(buf.String()), err //nolint:gosec // html/template's own output
}
