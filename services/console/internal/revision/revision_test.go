package revision

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestReason(t *testing.T) {
	t.Parallel()
	for why, want := range map[string]string{
		"PATCH /bo/documents/:id":            "edited",
		"event library.taxonomy.tag.deleted": "a tag it had was deleted",
		"event library.something.new":        "changed by the library (library.something.new)",
		"POST /bo/documents/:id/something":   "POST /bo/documents/:id/something",
	} {
		if got := Reason(why); got != want {
			t.Errorf("Reason(%q) = %q, want %q", why, got, want)
		}
	}
}

func TestChanges(t *testing.T) {
	t.Parallel()
	v1 := json.RawMessage(`{"title":"a","content":"x","tagsIds":["t"],"sources":[],"status":"published","updatedAt":"1"}`)
	tests := []struct {
		name          string
		before, after json.RawMessage
		want          []string
	}{
		{"first revision", nil, v1, nil},
		{"nothing but the time", v1, json.RawMessage(`{"title":"a","content":"x","tagsIds":["t"],"status":"published","updatedAt":"2"}`), nil},
		{"title and tags", v1, json.RawMessage(`{"title":"b","content":"x","tagsIds":[],"sources":null,"status":"published"}`), []string{"title", "tags"}},
		{"published and deleted", v1, json.RawMessage(`{"title":"a","content":"x","tagsIds":["t"],"status":"draft","isDeleted":true}`), []string{"status", "deletion"}},
	}
	for _, tc := range tests {
		if got := Changes(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Changes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
