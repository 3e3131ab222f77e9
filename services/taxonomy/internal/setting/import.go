package setting

import (
	"context"
	"errors"
	"strings"

	"github.com/doclib/libs/validation"
)

// ErrImportConflict is an import of settings where others were set: an
// import never changes what is there (doclib's merge rule).
var ErrImportConflict = errors.New("other settings are set: an import does not overwrite them")

// Import stores the settings as given, with their updatedAt and updatedBy
// (`doclib import`), if none were set (the deployment's default applies);
// the same settings again change nothing (created false); others are
// ErrImportConflict.
func (s *Service) Import(ctx context.Context, set Settings) (bool, error) {
	var errs validation.Errors
	if err := CheckEmail(strings.TrimSpace(set.ModeratorEmail)); err != "" || strings.TrimSpace(set.ModeratorEmail) != set.ModeratorEmail {
		errs.Add("moderatorEmail", "is not an e-mail address the settings store as is")
	}
	if set.UpdatedAt.IsZero() {
		errs.Add("updatedAt", "is required")
	}
	if err := errs.Err(); err != nil {
		return false, err
	}
	created, err := s.store.Create(ctx, set)
	if err != nil || created {
		return created, err
	}
	got, found, err := s.store.Get(ctx)
	switch {
	case err != nil:
		return false, err
	case found && got.ModeratorEmail == set.ModeratorEmail && got.UpdatedBy == set.UpdatedBy && got.UpdatedAt.Equal(set.UpdatedAt):
		return false, nil
	}
	return false, ErrImportConflict
}
