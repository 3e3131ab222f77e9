package tag

import (
	"context"
	"errors"
	"time"

	"github.com/doclib/libs/idempotency"
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
	claim, _ := idempotency.TakeClaim(ctx)
	switch err := s.store.InsertCategory(ctx, c, claim); {
	case errors.Is(err, ErrMadeBefore):
		// An earlier attempt of this request made it: that is the answer,
		// as it is now (its own answer was lost).
		made, err := s.store.Category(ctx, id)
		return made, deletedSince(err, KindCategory, id, ErrCategoryNotFound)
	case err != nil:
		return Category{}, err
	}
	return c, nil
}

// deletedSince is the error of reading again the record an earlier
// attempt of a create made: gone meanwhile (notFound; a tag's category
// being deleted, say), it was deleted since.
func deletedSince(err error, kind, id string, notFound error) error {
	if errors.Is(err, notFound) {
		return &KeyDeletedError{Kind: kind, ID: id}
	}
	return err
}

// RenameCategory changes a category's name.
func (s *Service) RenameCategory(ctx context.Context, id, name string) (Category, error) {
	if !ValidID(id) {
		return Category{}, ErrCategoryNotFound
	}
	var errs validation.Errors
	name = CleanName(&errs, "name", name)
	if err := errs.Err(); err != nil {
		return Category{}, err
	}
	return s.store.RenameCategory(ctx, id, name, s.now())
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
	claim, _ := idempotency.TakeClaim(ctx)
	if ValidID(categoryID) {
		if _, err := s.store.Category(ctx, categoryID); err == ErrCategoryNotFound {
			if made, answered, err := s.madeBefore(ctx, id, claim); answered {
				return made, err
			}
			errs.Add("categoryId", "unknown category '%s'", categoryID)
		} else if err != nil {
			return Tag{}, err
		}
	}
	if err := errs.Err(); err != nil {
		return Tag{}, err
	}
	now := s.now()
	t := Tag{ID: id, Name: name, CategoryID: categoryID, CreatedAt: now, UpdatedAt: now}
	switch err := s.store.InsertTag(ctx, t, claim); {
	case err == nil:
		return t, nil
	case errors.Is(err, ErrMadeBefore): // as CreateCategory
		made, err := s.store.Tag(ctx, id)
		return made, deletedSince(err, KindTag, id, ErrTagNotFound)
	case errors.Is(err, ErrCategoryNotFound): // deleted in the meantime
		idempotency.Forget(ctx) // as in madeBefore
		return Tag{}, validation.Errors{{Field: "categoryId", Message: "unknown category '" + categoryID + "'"}}
	default:
		return Tag{}, err
	}
}

// madeBefore is, for a keyed tag create whose category is unknown, what
// the key made: a category deleted since took the tag an earlier attempt
// made with it, and that is the answer (KeyDeletedError: 409), not 422
// "unknown category". answered is false when the key made nothing; the
// 422 then answered is not kept as the key's outcome (it depends on the
// category, which may come back): a retry asks again.
func (s *Service) madeBefore(ctx context.Context, id string, claim *idempotency.Claim) (made Tag, answered bool, err error) {
	if claim == nil {
		return Tag{}, false, nil
	}
	switch err := s.store.KeyOutcome(ctx, KindTag, claim); {
	case errors.Is(err, ErrMadeBefore):
		// Live but its category gone: being deleted with it.
		t, err := s.store.Tag(ctx, id)
		return t, true, deletedSince(err, KindTag, id, ErrTagNotFound)
	case err != nil:
		return Tag{}, true, err
	}
	idempotency.Forget(ctx)
	return Tag{}, false, nil
}

// RenameTag changes a tag's name.
func (s *Service) RenameTag(ctx context.Context, id, name string) (Tag, error) {
	if !ValidID(id) {
		return Tag{}, ErrTagNotFound
	}
	var errs validation.Errors
	name = CleanName(&errs, "name", name)
	if err := errs.Err(); err != nil {
		return Tag{}, err
	}
	return s.store.RenameTag(ctx, id, name, s.now())
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
