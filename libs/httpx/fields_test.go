package httpx

import (
	"strings"
	"testing"
)

type shapedBody struct {
	TagsIDs []string `json:"tagsIds"`
	FileID  string   `json:"fileId"`
	embeddedBody
}

type embeddedBody struct {
	PublishAt string `json:"publishAt"`
}

type readShape struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
	File      any    `json:"file"`
}

func (shapedBody) ReadShapes() []any { return []any{readShape{}} }

type plainBody struct {
	TagsIDs []string `json:"tagsIds"`
	Name    string   `json:"name"`
}

// TestUnknownFields: a misspelled member is a 422 naming it and the field
// meant, on every body; on a body that names its read shapes, a member of
// none is a 422 too, and the read shape's fields sent back are accepted.
func TestUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		dst        any
		want       []string // fields refused, in order, with the meant field after a colon
	}{
		{"misspelled", `{"tagIds":["a"]}`, &plainBody{}, []string{"tagIds:tagsIds"}},
		{"case", `{"TagsIds":["a"],"nme":"x"}`, &plainBody{}, []string{"TagsIds:tagsIds", "nme:name"}},
		{"another shape's field on a plain body", `{"id":"x","createdAt":"y","name":"n"}`, &plainBody{}, nil},
		{"read shape sent back", `{"id":"x","createdAt":"y","file":{"id":"f"},"tagsIds":[],"publishAt":""}`, &shapedBody{}, nil},
		{"embedded field misspelled", `{"publishedAt":"x"}`, &shapedBody{}, []string{"publishedAt:publishAt"}},
		{"no shape's field", `{"colour":"red","tagIds":[]}`, &shapedBody{}, []string{"colour:", "tagIds:tagsIds"}},
	} {
		p := DecodeJSON([]byte(tc.body), tc.dst)
		var got []string
		if p != nil {
			if p.Status != 422 {
				t.Errorf("%s: status %d, want 422", tc.name, p.Status)
			}
			for _, e := range p.Errors {
				meant := ""
				if i := strings.Index(e.Message, "'"); i >= 0 {
					meant = strings.Trim(e.Message[i:], "'?")
				}
				got = append(got, e.Field+":"+meant)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %s refused %v, want %v", tc.name, tc.body, got, tc.want)
		}
	}
}
