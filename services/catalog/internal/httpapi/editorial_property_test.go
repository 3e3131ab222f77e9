package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/doclib/libs/testkit"
)

// modelDoc is what the model knows of a document.
type modelDoc struct {
	deleted, draft bool
	title          string
	tags           []string
	pending        *string // pending changes' title, on a published document
	pendingTags    []string
}

// model is the public side as the workflow's rules say it should be.
type model struct {
	docs map[string]*modelDoc
	tags []string // tags that exist
}

// public returns id -> "title|tags" of the documents the public side shows.
func (m *model) public() map[string]string {
	out := map[string]string{}
	for id, d := range m.docs {
		if !d.deleted && !d.draft {
			out[id] = d.title + "|" + strings.Join(d.tags, ",")
		}
	}
	return out
}

// The public routes never show a draft, nor pending changes, in any
// interleaving: random sequences of create, draft, publish, unpublish,
// delete, restore and tag deletion, every public answer (listing, detail,
// an app's synced state) compared with the model after each step.
func TestPublicSideFollowsTheModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runModel(t, rand.New(rand.NewPCG(seed, 24)), 40)
		})
	}
}

func runModel(t *testing.T, rng *rand.Rand, steps int) {
	w := newWorld()
	m := &model{docs: map[string]*modelDoc{}}
	for i := range 6 {
		id := fmt.Sprintf("t%d", i)
		w.Tag(id, since, "c")
		m.tags = append(m.tags, id)
	}
	r := newReplica(t, testkit.Mongo(t), w)
	app := map[string]string{}
	cursor := ""
	for step := range steps {
		what := step1(t, r, m, rng)
		if t.Failed() {
			t.Fatalf("step %d (%s) failed", step, what)
		}
		cursor = checkPublic(t, r, m, app, cursor, fmt.Sprintf("step %d (%s)", step, what))
	}
}

// step1 makes one random change through the routes (or the tag event's
// handler), checks its status against the model, and applies it there.
func step1(t *testing.T, r *replica, m *model, rng *rand.Rand) string {
	ids := slices.Sorted(maps.Keys(m.docs))
	op := rng.IntN(9)
	if len(ids) == 0 {
		op = 0
	}
	var id string
	var d *modelDoc
	if len(ids) > 0 {
		id = ids[rng.IntN(len(ids))]
		d = m.docs[id]
	}
	tags := m.someTags(rng)
	tagsJSON := `,"tagsIds":["` + strings.Join(tags, `","`) + `"]`
	if len(tags) == 0 {
		tagsJSON = ""
	}
	title := fmt.Sprintf("title%d", rng.IntN(1000))
	switch op {
	case 0:
		draft := rng.IntN(2) == 0
		extra := tagsJSON
		if draft {
			extra += `,"status":"draft"`
		}
		created := r.create(linkBody(title, extra))
		m.docs[created.ID] = &modelDoc{draft: draft, title: title, tags: tags}
		return fmt.Sprintf("create draft=%v", draft)
	case 1, 2:
		asDraft := op == 1
		extra := tagsJSON
		if asDraft {
			extra += `,"draft":true`
		}
		a := r.do("PATCH", "/bo/documents/"+id, linkBody(title, extra))
		if expect(t, a, d.deleted, 409) {
			switch {
			case asDraft && !d.draft:
				d.pending, d.pendingTags = &title, tags
			default:
				d.title, d.tags = title, tags
			}
		}
		return fmt.Sprintf("PATCH draft=%v %s", asDraft, id)
	case 3:
		a := r.do("POST", "/bo/documents/"+id+"/publish", "")
		if expect(t, a, d.deleted || (!d.draft && d.pending == nil), 409) {
			if !d.draft {
				d.title, d.tags = *d.pending, d.pendingTags
			}
			d.draft, d.pending = false, nil
		}
		return "publish " + id
	case 4:
		a := r.do("POST", "/bo/documents/"+id+"/unpublish", "")
		if expect(t, a, d.deleted || d.draft, 409) {
			if d.pending != nil {
				d.title, d.tags = *d.pending, d.pendingTags
			}
			d.draft, d.pending = true, nil
		}
		return "unpublish " + id
	case 5:
		r.must("DELETE", "/bo/documents/"+id, "", 204)
		d.deleted = true
		return "delete " + id
	case 6:
		r.must("POST", "/bo/documents/"+id+"/restore", "", 200)
		d.deleted = false
		return "restore " + id
	case 7:
		a := r.do("DELETE", "/bo/documents/"+id+"/draft", "")
		if expect(t, a, d.deleted || d.pending == nil, 409) {
			d.pending = nil
		}
		return "discard " + id
	default:
		return m.deleteTag(t, r, rng)
	}
}

func (m *model) someTags(rng *rand.Rand) []string {
	var out []string
	for _, tag := range m.tags {
		if rng.IntN(3) == 0 {
			out = append(out, tag)
		}
	}
	return out
}

// deleteTag deletes a tag as taxonomy's event does: every document, and
// its pending changes, lose it.
func (m *model) deleteTag(t *testing.T, r *replica, rng *rand.Rand) string {
	if len(m.tags) == 0 {
		return "no tag left"
	}
	tag := m.tags[rng.IntN(len(m.tags))]
	m.tags = slices.DeleteFunc(m.tags, func(x string) bool { return x == tag })
	r.world.Untag(tag)
	changed, err := r.svc.TagsDeleted(context.Background(), []string{tag})
	testkit.Must(t, err, "TagsDeleted")
	r.lib.Put(changed...)
	drop := func(tags []string) []string { return slices.DeleteFunc(tags, func(x string) bool { return x == tag }) }
	for _, d := range m.docs {
		d.tags, d.pendingTags = drop(d.tags), drop(d.pendingTags)
	}
	return "delete tag " + tag
}

// expect checks a write's status: refused (want) or 200. It reports
// whether the write was made.
func expect(t *testing.T, a answer, refused bool, want int) bool {
	t.Helper()
	switch {
	case refused && a.code != want:
		t.Errorf("got %d %s, want %d", a.code, a.body, want)
	case !refused && a.code != 200:
		t.Errorf("got %d %s, want 200", a.code, a.body)
	}
	return !refused
}

// checkPublic compares the listing, every detail and the app's synced
// state with the model; it returns the app's new cursor.
func checkPublic(t *testing.T, r *replica, m *model, app map[string]string, cursor, when string) string {
	t.Helper()
	want := m.public()
	var list []struct {
		ID, Title string
		TagsIDs   []string `json:"tagsIds"`
	}
	r.must("GET", "/public/documents", "", 200).json(t, &list)
	got := map[string]string{}
	for _, d := range list {
		got[d.ID] = d.Title + "|" + strings.Join(d.TagsIDs, ",")
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%s: listing %v, model %v", when, got, want)
	}
	for id := range m.docs {
		a := r.do("GET", "/public/documents/"+id+"/detail", "")
		if _, public := want[id]; (a.code == 200) != public {
			t.Fatalf("%s: detail of %s = %d, public in the model: %v", when, id, a.code, public)
		}
	}
	p := r.sync(cursor) // one page: far fewer documents than a page holds
	for _, d := range p.Documents {
		app[d.ID] = d.Title
	}
	for _, id := range p.Removed {
		delete(app, id)
	}
	for id, v := range want {
		if app[id] != strings.SplitN(v, "|", 2)[0] {
			t.Fatalf("%s: the app holds %v, model %v", when, app, want)
		}
	}
	if len(app) != len(want) {
		t.Fatalf("%s: the app holds %v, model %v", when, app, want)
	}
	return p.Cursor
}
