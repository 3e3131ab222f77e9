package setting

import (
	"context"
	"strings"

	"github.com/doclib/libs/validation"
)

// Import stores the settings as given, with their updatedAt and updatedBy
// (`doclib import`); the same settings again change nothing.
func (s *Service) Import(ctx context.Context, set Settings) error {
	var errs validation.Errors
	if err := CheckEmail(strings.TrimSpace(set.ModeratorEmail)); err != "" || strings.TrimSpace(set.ModeratorEmail) != set.ModeratorEmail {
		errs.Add("moderatorEmail", "is not an e-mail address the settings store as is")
	}
	if set.UpdatedAt.IsZero() {
		errs.Add("updatedAt", "is required")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	return s.store.Put(ctx, set)
}
