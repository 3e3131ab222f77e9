// Package usage counts how many documents use each tag and each tag
// category, from the back-office listing, so that the console can say
// what a deletion will do before it happens.
package usage

// Doc is what counting needs of a document.
type Doc struct {
	TagIDs    []string
	IsDeleted bool
}

// Count is how many documents use a tag or category: Live ones, and
// Deleted ones (in the deleted view, restorable), which lose the tags too.
type Count struct {
	Live, Deleted int
}

// Total is every document counted.
func (c Count) Total() int { return c.Live + c.Deleted }

// Counts is the usage of every tag and category.
type Counts struct {
	Tags       map[string]Count
	Categories map[string]Count
}

// Compute counts docs; categoryOf maps a tag id to its category id (tags
// it does not know, deleted meanwhile, are not counted). A document with
// two tags of one category counts once for that category.
func Compute(categoryOf map[string]string, docs []Doc) Counts {
	out := Counts{Tags: map[string]Count{}, Categories: map[string]Count{}}
	for _, d := range docs {
		seenTag := map[string]bool{}
		seenCat := map[string]bool{}
		for _, t := range d.TagIDs {
			cat, ok := categoryOf[t]
			if !ok || seenTag[t] {
				continue
			}
			seenTag[t] = true
			out.Tags[t] = add(out.Tags[t], d.IsDeleted)
			if !seenCat[cat] {
				seenCat[cat] = true
				out.Categories[cat] = add(out.Categories[cat], d.IsDeleted)
			}
		}
	}
	return out
}

func add(c Count, deleted bool) Count {
	if deleted {
		c.Deleted++
	} else {
		c.Live++
	}
	return c
}
