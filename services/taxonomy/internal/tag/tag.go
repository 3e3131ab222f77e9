// Package tag owns the taxonomy of the document library: tag categories and
// the tags inside them, their rules, and the Store they need.
package tag

import (
	"context"
	"errors"
	"regexp"
	"time"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/doclib/libs/validation"
)

// Category groups tags. Tags is in creation order.
type Category struct {
	ID        string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
	Tags      []Tag
}

// Tag labels documents; it belongs to one category.
type Tag struct {
	ID         string
	Name       string
	CategoryID string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Errors the taxonomy answers with.
var (
	ErrCategoryNotFound = errors.New("category not found")
	ErrTagNotFound      = errors.New("tag not found")
	ErrDuplicateID      = errors.New("id already used")
	ErrDuplicateName    = errors.New("name already used")
)

// Check is a condition on the taxonomy as it is when a write runs (an
// If-Match): a store runs it in the write's transaction, on every category
// with its tags, and an error it returns stops the write and is answered.
type Check func(current []Category) error

// Store persists categories and tags. Lists come in creation order; deleted
// records are never returned. Each write is all or nothing. Implementations
// report a taken id or name with ErrDuplicateID or ErrDuplicateName, an
// unknown id with ErrCategoryNotFound or ErrTagNotFound.
type Store interface {
	Categories(ctx context.Context) ([]Category, error)
	Category(ctx context.Context, id string) (Category, error)
	InsertCategory(ctx context.Context, c Category) error
	// RenameCategory runs check (nil: none) first.
	RenameCategory(ctx context.Context, id, name string, at time.Time, check Check) (Category, error)
	// DeleteCategory deletes the category and all its tags, recording a
	// category event and one tag event per tag.
	DeleteCategory(ctx context.Context, id string, at time.Time) error

	Tag(ctx context.Context, id string) (Tag, error)
	// Tags returns the tags among ids that exist, in no particular order.
	Tags(ctx context.Context, ids []string) ([]Tag, error)
	// InsertTag stores t; ErrCategoryNotFound if its category does not
	// exist when t is stored.
	InsertTag(ctx context.Context, t Tag) error
	// RenameTag runs check (nil: none) first.
	RenameTag(ctx context.Context, id, name string, at time.Time, check Check) (Tag, error)
	// DeleteTag deletes the tag, recording a tag event.
	DeleteTag(ctx context.Context, id string, at time.Time) error
}

// Limits (CONTRACT.md §1 and §3).
const (
	MaxIDLen   = 64
	MaxNameLen = 100
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidID reports whether id is a well-formed caller-supplied id: 1 to 64
// characters of [A-Za-z0-9._-], starting with a letter or digit.
func ValidID(id string) bool { return idPattern.MatchString(id) }

func checkID(errs *validation.Errors, field, id string) {
	switch {
	case id == "":
		errs.Add(field, "is required")
	case !ValidID(id):
		errs.Add(field, "must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit", MaxIDLen)
	}
}

// CleanName trims name (white space and invisible characters) and checks
// it, recording a failure under field.
func CleanName(errs *validation.Errors, field, name string) string {
	name = validation.Trim(name)
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		errs.Add(field, "is required")
	case n > MaxNameLen:
		errs.Add(field, "must be at most %d characters (got %d)", MaxNameLen, n)
	case validation.UnsafeText(name) != "":
		errs.Add(field, "%s", validation.UnsafeText(name))
	}
	return name
}

var fold = cases.Fold()

// NameKey is the form under which names are unique: Unicode-normalised and
// case-folded, so "Santé" and "SANTÉ" collide. Stores keep it beside the name
// because FerretDB has no collations.
func NameKey(name string) string {
	return norm.NFC.String(fold.String(norm.NFC.String(name)))
}
