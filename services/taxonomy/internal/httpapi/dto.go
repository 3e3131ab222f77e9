package httpapi

import (
	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// Request bodies (TagCategoryCreate, TagCreate, TagCategoryUpdate, TagUpdate).
type (
	categoryCreate struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	tagCreate struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		CategoryID string `json:"categoryId"`
	}
	nameUpdate struct {
		Name string `json:"name"`
	}
)

// Response bodies (TagCategory, Tag, TagCategoryAdmin, TagAdmin).
type (
	publicTag struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		CategoryID string `json:"categoryId"`
	}
	publicCategory struct {
		ID   string      `json:"id"`
		Name string      `json:"name"`
		Tags []publicTag `json:"tags"`
	}
	adminTag struct {
		publicTag
		CreatedAt string `json:"createdAt"`
		UpdatedAt string `json:"updatedAt"`
	}
	adminCategory struct {
		ID        string     `json:"id"`
		Name      string     `json:"name"`
		Tags      []adminTag `json:"tags"`
		CreatedAt string     `json:"createdAt"`
		UpdatedAt string     `json:"updatedAt"`
	}
)

func toPublicTag(t tag.Tag) publicTag {
	return publicTag{ID: t.ID, Name: t.Name, CategoryID: t.CategoryID}
}

func toAdminTag(t tag.Tag) adminTag {
	return adminTag{publicTag: toPublicTag(t), CreatedAt: httpx.FormatTime(t.CreatedAt), UpdatedAt: httpx.FormatTime(t.UpdatedAt)}
}

func toPublicCategory(c tag.Category) publicCategory {
	out := publicCategory{ID: c.ID, Name: c.Name, Tags: make([]publicTag, len(c.Tags))}
	for i, t := range c.Tags {
		out.Tags[i] = toPublicTag(t)
	}
	return out
}

func toAdminCategory(c tag.Category) adminCategory {
	out := adminCategory{ID: c.ID, Name: c.Name, Tags: make([]adminTag, len(c.Tags)),
		CreatedAt: httpx.FormatTime(c.CreatedAt), UpdatedAt: httpx.FormatTime(c.UpdatedAt)}
	for i, t := range c.Tags {
		out.Tags[i] = toAdminTag(t)
	}
	return out
}
