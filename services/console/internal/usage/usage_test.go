package usage

import "testing"

func TestCompute(t *testing.T) {
	categoryOf := map[string]string{"a1": "A", "a2": "A", "b1": "B"}
	got := Compute(categoryOf, []Doc{
		{TagIDs: []string{"a1", "a2", "b1"}},
		{TagIDs: []string{"a1", "gone"}},
		{TagIDs: []string{"a2"}, IsDeleted: true},
		{TagIDs: []string{"a1", "a1"}}, // a repeated id counts once
		{},
	})
	want := map[string]Count{"a1": {Live: 3}, "a2": {Live: 1, Deleted: 1}, "b1": {Live: 1}}
	for id, w := range want {
		if got.Tags[id] != w {
			t.Errorf("tag %s: %+v, want %+v", id, got.Tags[id], w)
		}
	}
	if _, ok := got.Tags["gone"]; ok {
		t.Error("a tag no category holds was counted")
	}
	if got.Categories["A"] != (Count{Live: 3, Deleted: 1}) || got.Categories["B"] != (Count{Live: 1}) {
		t.Errorf("categories %+v, want A {3 1} (a document with two of its tags once), B {1 0}", got.Categories)
	}
	if got.Categories["A"].Total() != 4 {
		t.Errorf("A total %d, want 4", got.Categories["A"].Total())
	}
}
