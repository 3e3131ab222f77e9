package document

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/doclib/libs/validation"
)

// Limits (CONTRACT.md §3).
const (
	MaxTitle      = 300
	MaxURL        = 2048
	MaxContent    = 1 << 20
	MaxSources    = 100
	MaxSourceLen  = 2000
	MaxTags       = 100
	MaxImages     = 100
	PDFMimeType   = "application/pdf"
	imageMimeType = "image/"
)

// Input is the body of a create or an update: the common fields and those
// of every variant; only the variant's own fields are used.
type Input struct {
	Type      string
	Title     string
	TagsIDs   []string
	URL       string
	Content   string
	Sources   []string
	ImagesIDs []string
	FileID    string
	// RelatedIDs are pinned related documents (related.go); optional.
	RelatedIDs []string
	// The editorial fields (draft.go): Status on a create ("" is
	// published); Draft on a PATCH of a published document keeps the body
	// as pending changes; PublishAt and UnpublishAt, date-times as sent
	// ("" none), schedule a publication and an unpublication.
	Status      string
	Draft       bool
	PublishAt   string
	UnpublishAt string
}

// validate checks in against the rules of its type, without asking other
// services, and returns the document fields it sets (File names only the
// media id until the references are checked). Every failing field is
// reported.
func validate(ctx context.Context, in Input) (Document, validation.Errors) {
	var errs validation.Errors
	d := Document{Type: Type(in.Type)}

	d.Title = validation.Trim(in.Title)
	switch n := utf8.RuneCountInString(d.Title); {
	case n == 0:
		errs.Add("title", "is required")
	case n > MaxTitle:
		errs.Add("title", "must be at most %d characters (got %d)", MaxTitle, n)
	case validation.UnsafeText(d.Title) != "":
		errs.Add("title", "%s", validation.UnsafeText(d.Title))
	}
	if !d.Type.Valid() {
		if in.Type == "" {
			errs.Add("type", "is required: one of PDF, LINK, MARKDOWN, HTML")
		} else {
			errs.Add("type", "must be one of PDF, LINK, MARKDOWN, HTML (got '%s')", in.Type)
		}
	}
	d.TagsIDs = dedupe(in.TagsIDs)
	if len(d.TagsIDs) > MaxTags {
		errs.Add("tagsIds", "must hold at most %d tags (got %d)", MaxTags, len(d.TagsIDs))
	}
	d.RelatedIDs = orEmpty(in.RelatedIDs)

	switch d.Type {
	case Link:
		var msg string
		if d.URL, msg = checkURL(in.URL); msg != "" {
			errs.Add("url", "%s", msg)
		}
	case Markdown, HTML:
		switch {
		case strings.TrimSpace(in.Content) == "":
			errs.Add("content", "is required")
		case len(in.Content) > MaxContent:
			errs.Add("content", "must be at most %d bytes (got %d)", MaxContent, len(in.Content))
		}
		d.Content = in.Content
		if len(in.Content) <= MaxContent {
			clean, err := sanitize(ctx, d.Type, in.Content)
			d.Content = clean
			var fields validation.Errors
			switch {
			case errors.As(err, &fields):
				errs = append(errs, fields...)
			case err != nil:
				// The request ended (its client left, its budget passed):
				// its answer is read by no one, and nothing is stored.
				errs.Add("content", "could not be checked before the request ended")
			case strings.TrimSpace(in.Content) != "" && strings.TrimSpace(d.Content) == "":
				errs.Add("content", "has nothing left once unsafe HTML (scripts, event handlers, frames) is removed")
			case len(d.Content) > MaxContent:
				// Sanitising adds attributes and escapes: the stored text,
				// sent back in a PATCH, must fit the limit too.
				errs.Add("content", "must be at most %d bytes once sanitised (got %d)", MaxContent, len(d.Content))
			}
		}
		d.Sources = orEmpty(in.Sources)
		if len(d.Sources) > MaxSources {
			errs.Add("sources", "must hold at most %d sources (got %d)", MaxSources, len(d.Sources))
		}
		for i, s := range d.Sources {
			if n := utf8.RuneCountInString(s); n > MaxSourceLen {
				errs.Add(fmt.Sprintf("sources[%d]", i), "must be at most %d characters (got %d)", MaxSourceLen, n)
			} else if msg := validation.UnsafeText(s); msg != "" {
				errs.Add(fmt.Sprintf("sources[%d]", i), "%s", msg)
			}
		}
		d.ImagesIDs = dedupe(in.ImagesIDs)
		if len(d.ImagesIDs) > MaxImages {
			errs.Add("imagesIds", "must hold at most %d images (got %d)", MaxImages, len(d.ImagesIDs))
		}
	case PDF:
		if in.FileID == "" {
			errs.Add("fileId", "is required")
		} else {
			d.File = &File{ID: in.FileID}
		}
	}
	return d, errs
}

// adds returns the references in names, whose guards the store reads
// before they are checked (refs.go).
func (in Input) adds() Refs {
	r := Refs{Tags: askable(in.TagsIDs), Media: askable(in.ImagesIDs)}
	if in.FileID != "" && len(in.FileID) <= MaxRefIDLen {
		r.Media = append(r.Media, in.FileID)
	}
	return r
}

// Validate applies the rules of a create or an update to in, references
// checked with refs (not the pins, which need the store), and returns the
// document fields it sets: the write path's pure part, for tests and
// fuzzing. Every failing field is reported at once.
func Validate(ctx context.Context, refs References, in Input) (Document, error) {
	d, errs := validate(ctx, in)
	if err := checkRefs(ctx, refs, &d, &errs); err != nil {
		return Document{}, err
	}
	if err := errs.Err(); err != nil {
		return Document{}, err
	}
	return d, nil
}

// MaxRefIDLen bounds the ids worth asking about: a tag id is at most 64
// characters (the taxonomy's id rule) and a media id 22. A longer one is
// unknown without a lookup, so a huge id is a 422 and never a lookup the
// other service must refuse (which would read as that service failing).
const MaxRefIDLen = 64

// askable returns the ids that may exist.
func askable(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if len(id) <= MaxRefIDLen {
			out = append(out, id)
		}
	}
	return out
}

// clip shortens an id quoted in an error message.
func clip(id string) string {
	if len(id) <= MaxRefIDLen {
		return id
	}
	return strings.ToValidUTF8(id[:MaxRefIDLen], "") + "…"
}

// checkURL returns the normalised form of a LINK url, or why it is not
// acceptable (libs/validation.HTTPURL has the rules).
func checkURL(u string) (string, string) {
	u = strings.TrimSpace(u)
	if len(u) > MaxURL { // before parsing: bounded work
		return u, fmt.Sprintf("must be at most %d characters", MaxURL)
	}
	n, msg := validation.HTTPURL(u)
	switch {
	case msg != "":
		return u, msg
	case len(n) > MaxURL:
		return u, fmt.Sprintf("must be at most %d characters once normalised (got %d)", MaxURL, len(n))
	}
	return n, ""
}

// dedupe drops repeated ids, keeping the first of each, and never returns nil.
func dedupe(ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// sanitize returns content of type t (MARKDOWN or HTML) as the catalog
// stores it: a validation error when it cannot be read in bounded time, the
// context's error once ctx ends.
func sanitize(ctx context.Context, t Type, content string) (string, error) {
	if t == HTML {
		return SanitizeHTML(ctx, content)
	}
	return SanitizeMarkdown(ctx, content)
}
