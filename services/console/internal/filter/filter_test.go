package filter

import "testing"

func TestRules(t *testing.T) {
	t.Parallel()
	ix := NewIndex()
	ix.Add("flu", "Grippe", "topic")
	ix.Add("covid", "Covid", "topic")
	ix.Add("kids", "Enfants", "audience")
	ix.Add("adults", "Adultes", "audience")
	docs := map[string]Doc{
		"flu-kids":    {Title: "Vaccin", TagIDs: []string{"flu", "kids"}},
		"covid-adult": {Title: "Rappel", TagIDs: []string{"covid", "adults"}},
		"flu-only":    {Title: "Saison", TagIDs: []string{"flu"}},
		"none":        {Title: "Éducation"},
		"gone":        {Title: "Ancien", TagIDs: []string{"flu"}, IsDeleted: true},
	}
	tests := []struct {
		name string
		c    Criteria
		want []string
	}{
		{"nothing selected shows every live document", Criteria{}, []string{"flu-kids", "covid-adult", "flu-only", "none"}},
		{"one category is OR", Criteria{TagIDs: []string{"flu", "covid"}}, []string{"flu-kids", "covid-adult", "flu-only"}},
		{"two categories are AND", Criteria{TagIDs: []string{"flu", "covid", "kids"}}, []string{"flu-kids"}},
		{"text matches a tag name only", Criteria{Text: "enfants"}, []string{"flu-kids"}},
		{"text matches the title, case-insensitively", Criteria{Text: "RAPPEL"}, []string{"covid-adult"}},
		{"text with an accent in another normal form", Criteria{Text: "E\u0301ducation"}, []string{"none"}},
		{"deleted view shows deleted only", Criteria{Deleted: true}, []string{"gone"}},
		{"an unknown tag matches nothing", Criteria{TagIDs: []string{"removed"}}, nil},
		{"text never spans title and tag name", Criteria{Text: "vaccin grippe"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ix.Prepare(tt.c)
			got := map[string]bool{}
			for id, d := range docs {
				if r.Match(d) {
					got[id] = true
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("matched %v, want %v", got, tt.want)
			}
			for _, id := range tt.want {
				if !got[id] {
					t.Fatalf("matched %v, want %v", got, tt.want)
				}
			}
		})
	}
}
