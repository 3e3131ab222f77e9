package httpapi

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/taxonomy/internal/setting"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// FuzzTaxonomyBodies runs every taxonomy request body (TagCategoryCreate,
// TagCreate, TagCategoryUpdate and TagUpdate, which share nameUpdate, and
// the settings' PUT /bo/config) through the JSON binding and the rules the
// service applies: nothing panics, a refusal is a 400 or field errors, and
// an accepted id, name or e-mail address obeys the contract and is stable.
func FuzzTaxonomyBodies(f *testing.F) {
	for _, b := range []string{`{"id":"health","name":"Santé"}`, `{"id":"v","name":"Vaccins","categoryId":"health"}`,
		`{"name":" Vaccination "}`, `{"ID":"x","NAME":"y"}`, `{"id":"a","id":"b"}`, `{"name":"\u200b"}`,
		`{"name":"evil\u202etxt"}`, "{\"name\":\"a\xffb\"}", `{"id":"-x","name":"x"}`,
		`{"moderatorEmail":"moderation@example.org"}`, `{"moderatorEmail":"evil\u202e@example.org"}`, `{"moderatorEmail":null}`} {
		for shape := range uint8(4) {
			f.Add([]byte(b), shape)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, shape uint8) {
		var ids []string
		var name string
		var p interface{ Error() string }
		switch shape % 4 {
		case 0:
			var in categoryCreate
			if e := httpx.DecodeJSON(body, &in); e != nil {
				p = e
			}
			ids, name = []string{in.ID}, in.Name
		case 1:
			var in tagCreate
			if e := httpx.DecodeJSON(body, &in); e != nil {
				p = e
			}
			ids, name = []string{in.ID, in.CategoryID}, in.Name
		case 3:
			var in configUpdate
			if httpx.DecodeJSON(body, &in) != nil || in.ModeratorEmail == nil {
				return
			}
			email := strings.TrimSpace(*in.ModeratorEmail)
			if setting.CheckEmail(email) == "" && (validation.UnsafeText(email) != "" || !utf8.ValidString(email)) {
				t.Fatalf("the e-mail address %q of %q is accepted", email, body)
			}
			return
		default:
			var in nameUpdate
			if e := httpx.DecodeJSON(body, &in); e != nil {
				p = e
			}
			name = in.Name
		}
		if p != nil {
			return
		}
		var errs validation.Errors
		cleaned := tag.CleanName(&errs, "name", name)
		if len(errs) == 0 {
			if n := utf8.RuneCountInString(cleaned); n < 1 || n > tag.MaxNameLen || validation.Trim(cleaned) != cleaned || validation.UnsafeText(cleaned) != "" {
				t.Fatalf("name %q of %q accepted as %q", name, body, cleaned)
			}
			var again validation.Errors
			if tag.CleanName(&again, "name", cleaned) != cleaned || len(again) != 0 {
				t.Fatalf("name %q is not stable", cleaned)
			}
		}
		for _, id := range ids {
			if tag.ValidID(id) && (len(id) > tag.MaxIDLen || !utf8.ValidString(id)) {
				t.Fatalf("id %q of %q accepted", id, body)
			}
		}
	})
}
