package httpapi

import (
	"encoding/json"
	"time"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/library"
)

// documentInput is DocumentCreate / DocumentUpdate: the common fields plus
// those of every variant; the document's type picks which are used.
type documentInput struct {
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	TagsIDs   []string `json:"tagsIds"`
	URL       string   `json:"url"`
	Content   string   `json:"content"`
	Sources   []string `json:"sources"`
	ImagesIDs []string `json:"imagesIds"`
	FileID    string   `json:"fileId"`
	// RelatedIDs is optional: absent or null pins nothing.
	RelatedIDs []string `json:"relatedIds"`
	editorialInput
}

// ReadShapes: a client may send back the back-office detail it read (or a
// restore's or an import's answer, with clearedSchedule), its
// read-only fields (id, createdAt, version...) included; any other member
// is a 422 (httpx.ReadShaped).
func (documentInput) ReadShapes() []any { return []any{documentAdmin{}, clearingAnswer{}} }

func (in documentInput) domain() document.Input {
	return document.Input{Type: in.Type, Title: in.Title, TagsIDs: in.TagsIDs, URL: in.URL,
		Content: in.Content, Sources: in.Sources, ImagesIDs: in.ImagesIDs, FileID: in.FileID, RelatedIDs: in.RelatedIDs,
		Status: in.Status, Draft: in.Draft, PublishAt: in.PublishAt, UnpublishAt: in.UnpublishAt}
}

// documentShort is DocumentShort; documentAdminShort adds the BO fields.
type documentShort struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	URL     string   `json:"url,omitempty"`
	TagsIDs []string `json:"tagsIds"`
}

type documentAdminShort struct {
	documentShort
	audit
	Status string `json:"status"`
}

// audit is the back-office's record of a document's life (CONTRACT.md §5):
// deletedAt and deletedBy only while it is deleted.
type audit struct {
	IsDeleted bool    `json:"isDeleted"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
	CreatedBy string  `json:"createdBy"`
	UpdatedBy string  `json:"updatedBy"`
	DeletedAt string  `json:"deletedAt,omitempty"`
	DeletedBy *string `json:"deletedBy,omitempty"`
}

func toAudit(d document.Document) audit {
	// Deleted: in the trash. Not IsDeleted, which the replica's memory also
	// sets on a draft, to hide it from the public side (library/public.go).
	deleted := !d.DeletedAt.IsZero()
	a := audit{IsDeleted: deleted, CreatedAt: httpx.FormatTime(d.CreatedAt), UpdatedAt: httpx.FormatTime(d.UpdatedAt),
		CreatedBy: d.CreatedBy, UpdatedBy: d.UpdatedBy}
	if deleted {
		by := d.DeletedBy
		a.DeletedAt, a.DeletedBy = httpx.FormatTime(d.DeletedAt), &by
	}
	return a
}

type fileRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// documentDetail is Document; documentAdmin adds the BO fields.
type documentDetail struct {
	documentShort
	Content   *string   `json:"content,omitempty"`
	Sources   []string  `json:"sources"`
	ImagesIDs *[]string `json:"imagesIds,omitempty"` // a pointer: [] must show on MARKDOWN and HTML
	File      *fileRef  `json:"file,omitempty"`
	// RelatedDocuments are at most 5 live documents (document.Related).
	RelatedDocuments []documentShort `json:"relatedDocuments"`
}

type documentAdmin struct {
	documentDetail
	RelatedIDs []string `json:"relatedIds"`
	audit
	editorial
}

// clearingAnswer is the back-office detail of a restored or imported
// document whose overdue schedule was cleared, and what was cleared.
type clearingAnswer struct {
	documentAdmin
	ClearedSchedule *clearedSchedule `json:"clearedSchedule,omitempty"`
}

type clearedSchedule struct {
	PublishAt   string `json:"publishAt,omitempty"`
	UnpublishAt string `json:"unpublishAt,omitempty"`
	Reason      string `json:"reason"`
}

// optionalTime is a date as the API writes it, "" for none.
func optionalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return httpx.FormatTime(t)
}

type mediaUsage struct {
	InUse       bool     `json:"inUse"`
	DocumentIDs []string `json:"documentIds"`
}

func toShort(s document.Document) documentShort {
	return documentShort{ID: s.ID, Title: s.Title, Type: string(s.Type), URL: s.URL, TagsIDs: s.TagsIDs}
}

func toAdminShort(s document.Document) documentAdminShort {
	return documentAdminShort{documentShort: toShort(s), audit: toAudit(s), Status: string(s.State())}
}

func toDetail(d document.Document, related []*document.Document) documentDetail {
	out := documentDetail{
		documentShort:    documentShort{ID: d.ID, Title: d.Title, Type: string(d.Type), URL: d.URL, TagsIDs: d.TagsIDs},
		Sources:          []string{},
		RelatedDocuments: make([]documentShort, len(related)),
	}
	for i, r := range related {
		out.RelatedDocuments[i] = toShort(*r)
	}
	if d.Type.Inline() {
		content, images := d.Content, d.ImagesIDs
		if images == nil {
			images = []string{}
		}
		out.Content, out.Sources, out.ImagesIDs = &content, d.Sources, &images
	}
	if d.File != nil {
		out.File = &fileRef{ID: d.File.ID, Name: d.File.Name}
	}
	return out
}

func toAdmin(d document.Document, related []*document.Document) documentAdmin {
	pins := d.RelatedIDs
	if pins == nil {
		pins = []string{}
	}
	return documentAdmin{documentDetail: toDetail(d, related), RelatedIDs: pins, audit: toAudit(d), editorial: toEditorial(d)}
}

// syncPage is the answer of GET /public/sync (CONTRACT.md §8).
type syncPage struct {
	Cursor             string          `json:"cursor"`
	HasMore            bool            `json:"hasMore"`
	Documents          []syncDocument  `json:"documents"`
	RemovedDocumentIDs []string        `json:"removedDocumentIds"`
	TagCategories      json.RawMessage `json:"tagCategories,omitempty"`
}

// syncDocument is DocumentShort with updatedAt.
type syncDocument struct {
	documentShort
	UpdatedAt string `json:"updatedAt"`
}

func toSyncPage(p library.Page) syncPage {
	out := syncPage{Cursor: p.Next.String(), HasMore: p.HasMore, Documents: make([]syncDocument, len(p.Documents)),
		RemovedDocumentIDs: p.Removed, TagCategories: p.Categories}
	for i, d := range p.Documents {
		out.Documents[i] = syncDocument{documentShort: toShort(*d), UpdatedAt: httpx.FormatTime(d.UpdatedAt)}
	}
	if out.RemovedDocumentIDs == nil {
		out.RemovedDocumentIDs = []string{}
	}
	return out
}

// PublicDetail renders a document's public detail (GET
// /public/documents/:id/detail) as the catalog's events carry it, its
// related documents as lib knows them.
func PublicDetail(lib *library.Library) func(document.Document) json.RawMessage {
	return func(d document.Document) json.RawMessage {
		raw, err := json.Marshal(toDetailOf(lib.Current(), &d, false))
		if err != nil {
			return nil
		}
		return raw
	}
}
