// Package tag owns the taxonomy of the document library: tag categories and
// the tags inside them, their rules, and the Store they need.
package tag

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
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
	why := storableName(name)
	if why == "" {
		why = hiddenInName(name)
	}
	if why != "" {
		errs.Add(field, "%s", why)
	}
	return name
}

// storableName says why a trimmed name cannot be stored, or "": its
// length and the characters no text field holds. An import checks no
// more, so that a backup made before hiddenInName's rule restores.
func storableName(name string) string {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return "is required"
	case n > MaxNameLen:
		return fmt.Sprintf("must be at most %d characters (got %d)", MaxNameLen, n)
	}
	return validation.UnsafeText(name)
}

// hiddenInName says why name holds a character that changes nothing a
// reader sees, or "": a format character (U+200B ZERO WIDTH SPACE, U+00AD
// SOFT HYPHEN, U+2060 WORD JOINER, the directional marks...) or a line or
// paragraph separator, with which "Café\u200b N" would pass for "Café N".
// The zero-width joiner and non-joiner stay allowed: emoji sequences and
// some scripts (Persian, the Indic ones) are written with them, and NameKey
// ignores them.
//
// Tag characters (U+E0020..U+E007F) are allowed right after a black flag
// (U+1F3F4) or another tag character: the flags of England, Scotland and
// Wales are written that way.
func hiddenInName(name string) string {
	var prev rune
	for i, r := range name {
		flagTag := validation.IsTagChar(r) && (prev == validation.BlackFlag || validation.IsTagChar(prev))
		prev = r
		switch {
		case r == zwj || r == zwnj || flagTag:
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("must not contain invisible format characters (U+%04X at byte %d)", r, i)
		case unicode.In(r, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("must not contain line or paragraph separators (U+%04X at byte %d)", r, i)
		}
	}
	return ""
}

const (
	zwnj = '\u200C' // ZERO WIDTH NON-JOINER
	zwj  = '\u200D' // ZERO WIDTH JOINER
)

var fold = cases.Fold()

// NameKey is the form under which names are unique, so that names which
// look the same are the same name: compatibility-normalised (NFKC: a
// full-width "Ｃ" is "C", a no-break space a space) and case-folded
// ("Santé", "SANTÉ" and "Sante\u0301" collide), with every run of white
// space made one space and the invisible characters a name may hold
// (joiners, variation selectors) left out. It approximates Unicode's
// NFKC_Casefold with golang.org/x/text. Stores keep it beside the name,
// under a unique index, so that the rule is this function's, not a
// collation's.
func NameKey(name string) string {
	k := norm.NFKC.String(fold.String(norm.NFKC.String(name)))
	k = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case validation.IsInvisible(r):
			return -1
		}
		return r
	}, k)
	return strings.Join(strings.Fields(k), " ")
}
