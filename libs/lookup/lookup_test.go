package lookup

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestIDs(t *testing.T) {
	q, _ := url.ParseQuery("ids=a,b,,c&ids=d&ids=%20e")
	ids, err := IDs(q)
	if err != nil || !slices.Equal(ids, []string{"a", "b", "c", "d", " e"}) {
		t.Errorf("IDs = %q, %v", ids, err)
	}
	back, _ := url.ParseQuery(Query(ids))
	if again, _ := IDs(back); !slices.Equal(again, ids) {
		t.Errorf("Query then IDs = %q, want %q", again, ids)
	}
	many, _ := url.ParseQuery("ids=" + strings.TrimSuffix(strings.Repeat("x,", MaxIDs+1), ","))
	if _, err := IDs(many); err == nil {
		t.Errorf("%d ids accepted", MaxIDs+1)
	}
}
