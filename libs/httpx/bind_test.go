package httpx

import (
	"strings"
	"testing"
)

type bindShape struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Sources []string `json:"sources"`
}

func TestDecodeJSONStrict(t *testing.T) {
	tests := []struct {
		name, body string
		want       bindShape
		fields     string // failing fields of a 400, "" for success
		detail     string // part of the detail of a 400
	}{
		{"exact names", `{"id":"a","name":"b","sources":["s"]}`, bindShape{ID: "a", Name: "b", Sources: []string{"s"}}, "", ""},
		{"unknown fields ignored when no field is near", `{"id":"a","colour":"b"}`, bindShape{ID: "a"}, "", ""},
		{"unknown fields ignored", `{"id":"a","extra":{"x":[1,2]}}`, bindShape{ID: "a"}, "", ""},
		{"surrogate pair", `{"id":"\ud83d\ude00"}`, bindShape{ID: "😀"}, "", ""},
		{"null field is absent", `{"id":null}`, bindShape{}, "", ""},
		{"duplicate key", `{"id":"a","id":"b"}`, bindShape{}, "id", "appears twice"},
		{"duplicate nested key", `{"x":{"a":1,"a":2}}`, bindShape{}, "x.a", "appears twice"},
		{"invalid UTF-8", "{\"name\":\"a\xffb\"}", bindShape{}, "name", "UTF-8"},
		{"lone high surrogate", `{"name":"\ud800"}`, bindShape{}, "name", "surrogate"},
		{"lone low surrogate", `{"name":"x\udc00"}`, bindShape{}, "name", "surrogate"},
		{"null in an array", `{"sources":["a",null]}`, bindShape{}, "sources[1]", "wrong JSON type"},
		{"number in an array", `{"sources":[1]}`, bindShape{}, "sources[0]", "wrong JSON type"},
		{"every wrong type named", `{"id":1,"name":true,"sources":"x"}`, bindShape{}, "id,name,sources", "wrong JSON type"},
		{"not an object", `[]`, bindShape{}, "", "JSON object"},
		{"two values", `{} {}`, bindShape{}, "", "not valid JSON"},
		{"empty", ` `, bindShape{}, "", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bindShape
			p := DecodeJSON([]byte(tt.body), &got)
			if tt.detail == "" {
				if p != nil {
					t.Fatalf("DecodeJSON(%s) = %v, want success", tt.body, p)
				}
				if got.ID != tt.want.ID || got.Name != tt.want.Name || strings.Join(got.Sources, ",") != strings.Join(tt.want.Sources, ",") {
					t.Errorf("DecodeJSON(%s) decoded %+v, want %+v", tt.body, got, tt.want)
				}
				return
			}
			if p == nil || p.Status != 400 {
				t.Fatalf("DecodeJSON(%s) = %v, want a 400", tt.body, p)
			}
			var fields []string
			for _, f := range p.Errors {
				if f.Field != "" {
					fields = append(fields, f.Field)
				}
			}
			if strings.Join(fields, ",") != tt.fields || !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("DecodeJSON(%s): detail %q fields %v, want %q naming %q", tt.body, p.Detail, p.Errors, tt.detail, tt.fields)
			}
		})
	}
}
