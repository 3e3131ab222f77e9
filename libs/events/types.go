package events

// Type is one kind of event as the outside sees it: webhook subscriptions
// ask for it by Name, the live stream (GET /public/changes, /bo/changes)
// names its messages with it. Name is the subject without its
// "library.<service>." prefix, so it stays short and says what changed.
type Type struct {
	Name        string `json:"name"`
	Subject     string `json:"-"`
	Description string `json:"description"`
}

// types lists every event of the vocabulary once; api/openapi.yaml's
// x-events section describes the same list with its payloads.
var types = []Type{
	{"document.created", DocumentCreated, "A document was created, as a draft or published."},
	{"document.updated", DocumentUpdated, "The live version of a published document was edited."},
	{"document.draft_saved", DocumentDraftSaved, "A draft, or the pending changes of a published document, was saved: the app sees nothing new."},
	{"document.scheduled", DocumentScheduled, "A publication or unpublication was scheduled, or a schedule removed."},
	{"document.published", DocumentPublished, "A draft, or a document's pending changes, became what the app sees."},
	{"document.unpublished", DocumentUnpublished, "A published document went back to draft: the app no longer sees it."},
	{"document.deleted", DocumentDeleted, "A document was moved to the trash."},
	{"document.restored", DocumentRestored, "A document came back from the trash, was imported, or had a revision restored."},
	{"document.purged", DocumentPurged, "A document deleted longer ago than the trash retention is gone for good."},
	{"tag.created", TagCreated, "A tag was created in a category."},
	{"tag.renamed", TagRenamed, "A tag was renamed."},
	{"tag.deleted", TagDeleted, "A tag was deleted."},
	{"category.created", CategoryCreated, "A tag category was created."},
	{"category.renamed", CategoryRenamed, "A tag category was renamed."},
	{"category.deleted", CategoryDeleted, "A tag category was deleted, with its tags."},
	{"config.changed", ConfigChanged, "The public configuration (the moderator's address) was set."},
	{"media.uploaded", MediaUploaded, "A media file was uploaded."},
	{"media.deleted", MediaDeleted, "A media file was deleted."},
}

// Types returns every event type, in the vocabulary's order (documents,
// tags, categories, configuration, media).
func Types() []Type { return append([]Type(nil), types...) }

// TypeOf returns the type of the events published on subject.
func TypeOf(subject string) (Type, bool) {
	for _, t := range types {
		if t.Subject == subject {
			return t, true
		}
	}
	return Type{}, false
}

// TypeSubjects returns the subject of every type.
func TypeSubjects() []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.Subject
	}
	return out
}
