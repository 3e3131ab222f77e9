package pages

import (
	"context"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/usage"
)

// tagRow is a tag with how many documents use it.
type tagRow struct {
	boclient.Tag
	Use usage.Count
}

// categoryRow is a category with its tags and how many documents use any
// of them.
type categoryRow struct {
	ID, Name string
	Use      usage.Count
	Tags     []tagRow
}

// typedForm is the one form of the page that was sent and failed: which
// (Key), what was typed, and the API's answer.
type typedForm struct {
	Key, ID, Name string
	Err           *boclient.APIError
}

type tagsData struct {
	Categories []categoryRow
	Failed     typedForm
}

// FieldError is the API's message about field of the form key.
func (d tagsData) FieldError(key, field string) string {
	if d.Failed.Key != key || d.Failed.Err == nil {
		return ""
	}
	return sentence(tagLabels[field], d.Failed.Err.Field(field))
}

// tagLabels are the fields of the tag and category forms in their words.
var tagLabels = map[string]string{"name": "The name", "id": "The id", "categoryId": "The category"}

// FormError is the API's answer to the form key, when it failed.
func (d tagsData) FormError(key string) *boclient.APIError {
	if d.Failed.Key != key {
		return nil
	}
	return d.Failed.Err
}

// Typed is what was typed in field of the form key, else fallback.
func (d tagsData) Typed(key, field, fallback string) string {
	if d.Failed.Key != key {
		return fallback
	}
	if field == "id" {
		return d.Failed.ID
	}
	return d.Failed.Name
}

// taxonomy loads the categories and counts their use.
func (p *Pages) taxonomy(ctx context.Context, token string) ([]categoryRow, error) {
	cats, err := p.cfg.API.Categories(ctx, token)
	if err != nil {
		return nil, err
	}
	listed, err := p.cfg.API.Documents(ctx, token)
	if err != nil {
		return nil, err
	}
	categoryOf := map[string]string{}
	for _, cat := range cats {
		for _, t := range cat.Tags {
			categoryOf[t.ID] = cat.ID
		}
	}
	docs := make([]usage.Doc, len(listed))
	for i, d := range listed {
		docs[i] = usage.Doc{TagIDs: d.TagIDs, IsDeleted: d.IsDeleted}
	}
	counts := usage.Compute(categoryOf, docs)
	rows := make([]categoryRow, len(cats))
	for i, cat := range cats {
		rows[i] = categoryRow{ID: cat.ID, Name: cat.Name, Use: counts.Categories[cat.ID]}
		for _, t := range cat.Tags {
			rows[i].Tags = append(rows[i].Tags, tagRow{Tag: t, Use: counts.Tags[t.ID]})
		}
	}
	return rows, nil
}

func (p *Pages) tagsPage(c *gin.Context) {
	p.showTags(c, http.StatusOK, typedForm{})
}

// showTags renders the page; failed, when set, is the form that failed,
// shown again with what was typed and the API's words.
func (p *Pages) showTags(c *gin.Context, status int, failed typedForm) {
	d := tagsData{Failed: failed}
	if s, ok := current(c); ok {
		ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
		defer cancel()
		rows, err := p.taxonomy(ctx, s.Token)
		if err != nil && failed.Key == "" {
			p.fail(c, err)
			return
		}
		d.Categories = rows
	}
	p.render(c, status, "tags", view{Title: "Tags and categories", Notice: tagsNotice(c.Query("done")), Data: d})
}

func tagsNotice(what string) string {
	return map[string]string{
		"category-created": "The category was created.", "category-renamed": "The category was renamed.",
		"category-deleted": "The category and its tags were deleted.", "tag-created": "The tag was created.",
		"tag-renamed": "The tag was renamed.", "tag-deleted": "The tag was deleted.",
	}[what]
}

// taxonomyWrite runs act with the session's token; on success it goes
// back to the page saying done, else shows the form again as typed.
func (p *Pages) taxonomyWrite(c *gin.Context, f typedForm, done string, act func(ctx context.Context, token string) error) {
	s, ok := current(c)
	if !ok {
		f.Err = sessionEnded
		p.showTags(c, http.StatusUnauthorized, f)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	if err := act(ctx, s.Token); err != nil {
		f.Err = explain(boclient.AsAPIError(err))
		p.showTags(c, status(f.Err), f)
		return
	}
	c.Redirect(http.StatusSeeOther, Base+"/tags?"+url.Values{"done": {done}}.Encode())
}

func (p *Pages) createCategory(c *gin.Context) {
	f := typedForm{Key: "new-category", ID: c.PostForm("id"), Name: c.PostForm("name")}
	p.taxonomyWrite(c, f, "category-created", func(ctx context.Context, token string) error {
		return p.cfg.API.CreateCategory(ctx, token, f.ID, f.Name)
	})
}

func (p *Pages) renameCategory(c *gin.Context) {
	f := typedForm{Key: "category-" + c.Param("id"), ID: c.Param("id"), Name: c.PostForm("name")}
	p.taxonomyWrite(c, f, "category-renamed", func(ctx context.Context, token string) error {
		return p.cfg.API.RenameCategory(ctx, token, f.ID, f.Name)
	})
}

func (p *Pages) createTag(c *gin.Context) {
	cat := c.PostForm("categoryId")
	f := typedForm{Key: "new-tag-" + cat, ID: c.PostForm("id"), Name: c.PostForm("name")}
	p.taxonomyWrite(c, f, "tag-created", func(ctx context.Context, token string) error {
		return p.cfg.API.CreateTag(ctx, token, f.ID, f.Name, cat)
	})
}

func (p *Pages) renameTag(c *gin.Context) {
	f := typedForm{Key: "tag-" + c.Param("id"), ID: c.Param("id"), Name: c.PostForm("name")}
	p.taxonomyWrite(c, f, "tag-renamed", func(ctx context.Context, token string) error {
		return p.cfg.API.RenameTag(ctx, token, f.ID, f.Name)
	})
}

func (p *Pages) deleteCategory(c *gin.Context) {
	f := typedForm{Key: "category-" + c.Param("id"), ID: c.Param("id")}
	p.taxonomyWrite(c, f, "category-deleted", func(ctx context.Context, token string) error {
		return p.cfg.API.DeleteCategory(ctx, token, f.ID)
	})
}

func (p *Pages) deleteTag(c *gin.Context) {
	f := typedForm{Key: "tag-" + c.Param("id"), ID: c.Param("id")}
	p.taxonomyWrite(c, f, "tag-deleted", func(ctx context.Context, token string) error {
		return p.cfg.API.DeleteTag(ctx, token, f.ID)
	})
}

// confirmData is what the deletion's confirm page says will happen.
type confirmData struct {
	Kind, ID, Name string // Kind: "category" or "tag"
	Tags           []string
	Use            usage.Count
}

// confirmDelete says, before anything happens, what deleting the category
// or tag of the path does: the tags it takes with it, the documents that
// lose them.
func (p *Pages) confirmDelete(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, _ := current(c)
		ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
		defer cancel()
		rows, err := p.taxonomy(ctx, s.Token)
		if err != nil {
			p.fail(c, err)
			return
		}
		d, ok := findForDeletion(rows, kind, c.Param("id"))
		if !ok {
			p.fail(c, &boclient.APIError{Status: http.StatusNotFound, Code: "not_found", Detail: "There is no such " + kind + " (any more)."})
			return
		}
		p.render(c, http.StatusOK, "confirm", view{Title: "Delete the " + kind + " " + d.Name + "?", Data: d})
	}
}

func findForDeletion(rows []categoryRow, kind, id string) (confirmData, bool) {
	for _, cat := range rows {
		if kind == "category" && cat.ID == id {
			d := confirmData{Kind: kind, ID: id, Name: cat.Name, Use: cat.Use}
			for _, t := range cat.Tags {
				d.Tags = append(d.Tags, t.Name)
			}
			return d, true
		}
		for _, t := range cat.Tags {
			if kind == "tag" && t.ID == id {
				return confirmData{Kind: kind, ID: id, Name: t.Name, Use: t.Use}, true
			}
		}
	}
	return confirmData{}, false
}
