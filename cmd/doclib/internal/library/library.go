// Package library owns what a doclib archive holds beyond its format: the
// records (kept as the back-office API answered them, so an import writes
// them back byte for byte), the references between them, and Verify, which
// checks an archive's digests and references without importing it.
package library

import (
	"encoding/json"
	"fmt"
)

// Document is one documents/<id>.json entry: the back-office detail of a
// document (deleted ones too) and its revisions, oldest first, each as the
// API answered it.
type Document struct {
	Document  json.RawMessage   `json:"document"`
	Revisions []json.RawMessage `json:"revisions"`
}

// Media is one line of media.jsonl: the back-office media record.
type Media struct {
	ID     string `json:"id"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Tag is the part of a tags.jsonl line references need.
type Tag struct {
	ID         string `json:"id"`
	CategoryID string `json:"categoryId"`
}

// Category is the part of a categories.jsonl line references need.
type Category struct {
	ID string `json:"id"`
}

// Refs are what a document names: tags, media and pinned documents, its
// pending changes' included (the catalog keeps those true as well).
// Revisions are history: they may name what is gone (a restore drops it).
type Refs struct {
	ID        string
	Tags      []string
	Media     []string
	Documents []string
}

// docRefs is the part of a back-office detail that holds references.
type docRefs struct {
	ID         string   `json:"id"`
	TagsIDs    []string `json:"tagsIds"`
	ImagesIDs  []string `json:"imagesIds"`
	RelatedIDs []string `json:"relatedIds"`
	File       *struct {
		ID string `json:"id"`
	} `json:"file"`
	Draft *docRefs `json:"draft"`
}

func (d docRefs) add(r *Refs) {
	r.Tags = append(r.Tags, d.TagsIDs...)
	r.Media = append(r.Media, d.ImagesIDs...)
	r.Documents = append(r.Documents, d.RelatedIDs...)
	if d.File != nil && d.File.ID != "" {
		r.Media = append(r.Media, d.File.ID)
	}
	if d.Draft != nil {
		d.Draft.add(r)
	}
}

// DocumentRefs returns the references of a back-office document detail.
func DocumentRefs(detail json.RawMessage) (Refs, error) {
	var d docRefs
	if err := json.Unmarshal(detail, &d); err != nil {
		return Refs{}, err
	}
	if d.ID == "" {
		return Refs{}, fmt.Errorf("the document has no id")
	}
	r := Refs{ID: d.ID}
	d.add(&r)
	return r, nil
}
