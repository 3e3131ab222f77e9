// Package setting owns the library's public settings: today the moderator's
// e-mail address the mobile app shows (seed §4.6 point 4; CONTRACT.md §7,
// "public config"). Until an editor sets it, it is the deployment's default
// (MODERATOR_EMAIL). Taxonomy keeps it because it is the library's other
// reference data read at every start of the app, small and rarely written;
// a service of its own would be one more deployment for one field.
package setting

import (
	"context"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/idna"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/validation"
)

// Settings are the public settings and who last set them.
type Settings struct {
	ModeratorEmail string
	// UpdatedAt and UpdatedBy say when and by whom an editor last set them;
	// zero while the deployment's default applies.
	UpdatedAt time.Time
	UpdatedBy string
}

// Store keeps the settings: one record.
type Store interface {
	// Get returns the stored settings, or found false before the first Put.
	Get(ctx context.Context) (s Settings, found bool, err error)
	// Put replaces them if check (nil: none) holds on the stored settings
	// (found false before the first Put), in the same transaction.
	Put(ctx context.Context, s Settings, check func(stored Settings, found bool) error) error
	// Create stores them only if none are stored (created false then).
	Create(ctx context.Context, s Settings) (created bool, err error)
}

// Service reads and sets the settings.
type Service struct {
	store Store
	def   Settings
	now   func() time.Time
}

// NewService returns a Service whose settings are defaultEmail until an
// editor sets them.
func NewService(store Store, defaultEmail string) *Service {
	return &Service{store: store, def: Settings{ModeratorEmail: defaultEmail}, now: time.Now}
}

// Get returns the settings in force.
func (s *Service) Get(ctx context.Context) (Settings, error) {
	got, found, err := s.store.Get(ctx)
	if err != nil || !found {
		return s.def, err
	}
	return got, nil
}

// Check is a condition on the settings in force when a write runs (an
// If-Match): an error it returns stops the write and is answered.
type Check func(current Settings) error

// SetModeratorEmail sets the moderator's address, recording the caller
// (identity.Name), if check (nil: none) holds. An address that is not one
// is a validation.Errors and changes nothing.
func (s *Service) SetModeratorEmail(ctx context.Context, email string, check Check) (Settings, error) {
	email = strings.TrimSpace(email)
	var errs validation.Errors
	if err := CheckEmail(email); err != "" {
		errs.Add("moderatorEmail", "%s", err)
	}
	if err := errs.Err(); err != nil {
		return Settings{}, err
	}
	set := Settings{ModeratorEmail: email, UpdatedAt: s.now().UTC().Truncate(time.Millisecond), UpdatedBy: identity.Name(ctx)}
	var stored func(Settings, bool) error
	if check != nil {
		stored = func(got Settings, found bool) error {
			if !found {
				got = s.def
			}
			return check(got)
		}
	}
	if err := s.store.Put(ctx, set, stored); err != nil {
		return Settings{}, err
	}
	return set, nil
}

// MaxEmailLength is the longest address accepted (RFC 5321's path limit
// less the angle brackets).
const MaxEmailLength = 254

// CheckEmail says why v is not an e-mail address a person can write to, or
// "" when it is: a bare addr-spec (no display name, no angle brackets), a
// local part of at most 64 characters, and a domain that is a host name
// (checkDomain).
func CheckEmail(v string) string {
	switch {
	case v == "":
		return "is required"
	case len(v) > MaxEmailLength:
		return "is longer than 254 characters"
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "is not an e-mail address (it holds a space or a control character)"
	case validation.UnsafeText(v) != "" || strings.IndexFunc(v, validation.IsInvisible) >= 0:
		// Shown by the app: nothing may reorder or hide part of it.
		return "is not an e-mail address (it holds an invisible or bidirectional character)"
	}
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v {
		return "is not an e-mail address (name@example.org)"
	}
	local, domain, _ := strings.Cut(a.Address, "@")
	if len(local) > 64 {
		return "has a local part longer than 64 characters"
	}
	if strings.ContainsAny(local, mailtoSpecials) {
		return "is not an e-mail address people can write to: its name part holds one of ? & # % (a mailto: link built from it would carry other recipients or a body)"
	}
	return checkDomain(domain)
}

// mailtoSpecials are the characters RFC 5322 allows in a local part that
// end or escape a mailto: link's address (RFC 6068 §2): an app putting
// "m?cc=x%40evil.org@example.org" after "mailto:" sends a copy to x, and
// "a%0Abcc@..." decodes to a line break. No real mailbox needs them.
const mailtoSpecials = "?&#%"

// hostName is UTS #46 processing for lookup with every check on: STD3
// letters, digits and hyphens (no '?', '&', '%', '{', which RFC 5322 allows
// in a domain but would change a mailto: link built from the address), no
// hyphen at either end of a label, the bidi rule, and DNS lengths (labels
// of 1 to 63 octets, 253 in all). golang.org/x/net/idna is the Go team's
// implementation, kept up to date with Unicode.
var hostName = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.VerifyDNSLength(true), idna.Transitional(false))

// checkDomain says why domain is not a host name that mail can go to: an
// LDH or internationalized name of at least two labels whose last is not
// all digits (so not an IP address, RFC 3696 §2), or "" when it is.
func checkDomain(domain string) string {
	const msg = "is not an e-mail address: the domain must be a host name such as example.org"
	ascii, err := hostName.ToASCII(domain)
	if err != nil {
		return msg
	}
	labels := strings.Split(ascii, ".")
	top := labels[len(labels)-1]
	if len(labels) < 2 || strings.Trim(top, "0123456789") == "" {
		return msg
	}
	return ""
}
