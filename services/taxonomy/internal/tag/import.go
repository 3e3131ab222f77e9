package tag

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/doclib/libs/validation"
)

// ErrImportConflict is an import of a record whose id exists with other
// content: an import never changes what is there (doclib's merge rule).
var ErrImportConflict = errors.New("a record with this id exists and differs from the imported one")

// errNameTaken is an import whose id is free but whose name another record
// holds: a conflict like any other (the merge rule of docs/platform.md, "Backup and restore"), so that
// `doclib import -merge` keeps the existing record and goes on.
var errNameTaken = fmt.Errorf("%w: another record has this name", ErrImportConflict)

// ImportCategory stores c as given (id, name, timestamps), as
// `doclib import` restores an archive: created reports whether it was
// stored; the same record again changes nothing (false); another record
// under its id is ErrImportConflict. Its tags are imported one by one.
func (s *Service) ImportCategory(ctx context.Context, c Category) (bool, error) {
	var errs validation.Errors
	checkID(&errs, "id", c.ID)
	checkImported(&errs, c.Name, c.CreatedAt, c.UpdatedAt)
	if err := errs.Err(); err != nil {
		return false, err
	}
	c.Tags = []Tag{}
	err := s.store.InsertCategory(ctx, c)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, ErrDuplicateID) && !errors.Is(err, ErrDuplicateName) {
		return false, err
	}
	got, gerr := s.store.Category(ctx, c.ID)
	switch {
	case errors.Is(gerr, ErrCategoryNotFound):
		return false, errNameTaken // the name is another category's
	case gerr != nil:
		return false, gerr
	case got.Name == c.Name && got.CreatedAt.Equal(c.CreatedAt) && got.UpdatedAt.Equal(c.UpdatedAt):
		return false, nil
	}
	return false, ErrImportConflict
}

// ImportTag is ImportCategory for a tag; its category must exist
// (ErrCategoryNotFound).
func (s *Service) ImportTag(ctx context.Context, t Tag) (bool, error) {
	var errs validation.Errors
	checkID(&errs, "id", t.ID)
	checkID(&errs, "categoryId", t.CategoryID)
	checkImported(&errs, t.Name, t.CreatedAt, t.UpdatedAt)
	if err := errs.Err(); err != nil {
		return false, err
	}
	err := s.store.InsertTag(ctx, t)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, ErrDuplicateID) && !errors.Is(err, ErrDuplicateName) {
		return false, err
	}
	got, gerr := s.store.Tag(ctx, t.ID)
	switch {
	case errors.Is(gerr, ErrTagNotFound):
		return false, errNameTaken
	case gerr != nil:
		return false, gerr
	case got.Name == t.Name && got.CategoryID == t.CategoryID && got.CreatedAt.Equal(t.CreatedAt) && got.UpdatedAt.Equal(t.UpdatedAt):
		return false, nil
	}
	return false, ErrImportConflict
}

// checkImported: an imported name must already be a clean name (it was
// one where it came from; one stored before format characters were
// refused in names keeps them, its NameKey ignores them), and its dates
// set and in order.
func checkImported(errs *validation.Errors, name string, created, updated time.Time) {
	if validation.Trim(name) != name || storableName(name) != "" {
		errs.Add("name", "is not a name the taxonomy stores as is")
	}
	if created.IsZero() {
		errs.Add("createdAt", "is required")
	}
	if updated.IsZero() || updated.Before(created) {
		errs.Add("updatedAt", "is required, at or after createdAt")
	}
}
