// Package doctest stands in, in tests, for the services the catalog asks:
// taxonomy (which tags exist, since when, in which category) and media.
// Tests change what exists while writes run.
package doctest

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// World is what taxonomy and media hold. It implements
// document.References and library.Taxonomy.
type World struct {
	mu     sync.Mutex
	tags   map[string]tag
	medias map[string]document.Media
	err    error
	// onMedias, when set, runs at the start of each media lookup; onTags
	// at the end of each tag lookup, once its answer is taken.
	onMedias func()
	onTags   func()
}

type tag struct {
	created  time.Time
	category string
}

// New returns a world with no tags and no media.
func New() *World { return &World{tags: map[string]tag{}, medias: map[string]document.Media{}} }

// Tag makes the tag id exist, created at created, in category.
func (w *World) Tag(id string, created time.Time, category string) *World {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tags[id] = tag{created: created, category: category}
	return w
}

// Untag deletes the tag id.
func (w *World) Untag(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.tags, id)
}

// Media makes m exist (or changes it: Deleting).
func (w *World) Media(m document.Media) *World {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.medias[m.ID] = m
	return w
}

// Unmedia deletes the media id.
func (w *World) Unmedia(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.medias, id)
}

// Fail makes every lookup fail with err (nil: answer again).
func (w *World) Fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// OnMedias runs f at the end of each media lookup, once its answer is
// taken: what f changes happens after the answer, as in a race.
func (w *World) OnMedias(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onMedias = f
}

// OnTags runs f at the end of each tag lookup, once its answer is taken:
// what f changes happens after the answer, as in a race.
func (w *World) OnTags(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onTags = f
}

// Tags implements document.References.
func (w *World) Tags(_ context.Context, ids []string) (map[string]time.Time, error) {
	w.mu.Lock()
	out := map[string]time.Time{}
	for _, id := range ids {
		if t, ok := w.tags[id]; ok {
			out[id] = t.created
		}
	}
	hook, err := w.onTags, w.err
	w.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, err
}

// Medias implements document.References.
func (w *World) Medias(_ context.Context, ids []string) (map[string]document.Media, error) {
	w.mu.Lock()
	out := map[string]document.Media{}
	for _, id := range ids {
		if m, ok := w.medias[id]; ok {
			out[id] = m
		}
	}
	hook, err := w.onMedias, w.err
	w.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, err
}

// CategoriesJSON is the tag categories as taxonomy serves them (ids only).
func (w *World) CategoriesJSON() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	type tagJSON struct {
		ID string `json:"id"`
	}
	type catJSON struct {
		ID   string    `json:"id"`
		Tags []tagJSON `json:"tags"`
	}
	byCat := map[string][]tagJSON{}
	for id, t := range w.tags {
		byCat[t.category] = append(byCat[t.category], tagJSON{ID: id})
	}
	cats := []catJSON{}
	for c, tags := range byCat {
		sort.Slice(tags, func(i, j int) bool { return tags[i].ID < tags[j].ID })
		cats = append(cats, catJSON{ID: c, Tags: tags})
	}
	sort.Slice(cats, func(i, j int) bool { return cats[i].ID < cats[j].ID })
	b, _ := json.Marshal(cats)
	return b
}

// Categories implements library.Taxonomy; the ETag is the body itself.
func (w *World) Categories(_ context.Context, etag string) ([]byte, string, bool, error) {
	b := w.CategoriesJSON()
	if etag == string(b) {
		return nil, etag, false, w.err
	}
	return b, string(b), true, w.err
}
