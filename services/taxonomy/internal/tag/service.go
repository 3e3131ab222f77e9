package tag

import (
	"context"
	"errors"
	"time"

	"github.com/doclib/libs/validation"
)

// Service is the taxonomy's use cases.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service over store.
func NewService(store Store) *Service {
	return &Service{store: store, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Categories returns every category with its tags, in creation order.
func (s *Service) Categories(ctx context.Context) ([]Category, error) {
	return s.store.Categories(ctx)
}

// CreateCategory validates and stores a new category.
func (s *Service) CreateCategory(ctx context.Context, id, name string) (Category, error) {
	var errs validation.Errors
	checkID(&errs, "id", id)
	name = CleanName(&errs, "name", name)
	if err := errs.Err(); err != nil {
		return Category{}, err
	}
	now := s.now()
	c := Category{ID: id, Name: name, CreatedAt: now, UpdatedAt: now, Tags: []Tag{}}
	if err := s.store.InsertCategory(ctx, c); err != nil {
		return Category{}, err
	}
	return c, nil
}

// RenameCategory changes a category's name, if check (nil: none) holds.
func (s *Service) RenameCategory(ctx context.Context, id, name string, check Check) (Category, error) {
	if !ValidID(id) {
		return Category{}, ErrCategoryNotFound
	}
	var errs validation.Errors
	name = CleanName(&errs, "name", name)
	if err := errs.Err(); err != nil {
		return Category{}, err
	}
	return s.store.RenameCategory(ctx, id, name, s.now(), check)
}

// DeleteCategory deletes a category and its tags.
func (s *Service) DeleteCategory(ctx context.Context, id string) error {
	if !ValidID(id) {
		return ErrCategoryNotFound
	}
	return s.store.DeleteCategory(ctx, id, s.now())
}

// CreateTag validates and stores a new tag in an existing category.
func (s *Service) CreateTag(ctx context.Context, id, name, categoryID string) (Tag, error) {
	var errs validation.Errors
	checkID(&errs, "id", id)
	name = CleanName(&errs, "name", name)
	checkID(&errs, "categoryId", categoryID)
	if len(errs) > 0 && ValidID(categoryID) {
		// Every field's error at once: the store's insert says it too.
		if _, err := s.store.Category(ctx, categoryID); errors.Is(err, ErrCategoryNotFound) {
			errs.Add("categoryId", "unknown category '%s'", categoryID)
		}
	}
	if err := errs.Err(); err != nil {
		return Tag{}, err
	}
	now := s.now()
	t := Tag{ID: id, Name: name, CategoryID: categoryID, CreatedAt: now, UpdatedAt: now}
	switch err := s.store.InsertTag(ctx, t); {
	case errors.Is(err, ErrCategoryNotFound):
		return Tag{}, validation.Errors{{Field: "categoryId", Message: "unknown category '" + categoryID + "'"}}
	case err != nil:
		return Tag{}, err
	}
	return t, nil
}

// RenameTag changes a tag's name, if check (nil: none) holds.
func (s *Service) RenameTag(ctx context.Context, id, name string, check Check) (Tag, error) {
	if !ValidID(id) {
		return Tag{}, ErrTagNotFound
	}
	var errs validation.Errors
	name = CleanName(&errs, "name", name)
	if err := errs.Err(); err != nil {
		return Tag{}, err
	}
	return s.store.RenameTag(ctx, id, name, s.now(), check)
}

// DeleteTag deletes a tag.
func (s *Service) DeleteTag(ctx context.Context, id string) error {
	if !ValidID(id) {
		return ErrTagNotFound
	}
	return s.store.DeleteTag(ctx, id, s.now())
}

// Tags returns the existing tags among ids, for other services' reference
// checks; unknown ids are left out.
func (s *Service) Tags(ctx context.Context, ids []string) ([]Tag, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if ValidID(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return []Tag{}, nil
	}
	return s.store.Tags(ctx, valid)
}
