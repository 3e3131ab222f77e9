package e2e

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestMediaDeletionRacingADocumentCreation: DELETE /bo/medias/M and
// POST /bo/documents naming M as a PDF's file, sent at the same moment, over
// and over with the start of either shifted by up to a few milliseconds. In
// no interleaving may both succeed: the deletion is 409 (a live document, or
// a write in flight, uses the media) or the write is 422 (the media is
// being deleted). And every document answered 201 keeps its file: its
// detail names it and its download serves the bytes.
func TestMediaDeletionRacingADocumentCreation(t *testing.T) {
	st := NewStack(t, nil)
	const trials, lanes = 200, 4 // lanes of trials side by side, for time
	medias := make([]string, trials)
	var uploads sync.WaitGroup
	for lane := range lanes {
		uploads.Go(func() {
			for i := lane; i < trials; i += lanes {
				medias[i] = st.Upload(fmt.Sprintf("race-%d.pdf", i), unique(pdfBytes, fmt.Sprint(i)))
			}
		})
	}
	uploads.Wait()
	var mu sync.Mutex
	outcomes := map[string]int{}
	var created []string
	var lanesDone sync.WaitGroup
	for lane := range lanes {
		lanesDone.Go(func() {
			for i := lane; i < trials; i += lanes {
				trial(t, st, i, medias[i], &mu, outcomes, &created)
			}
		})
	}
	lanesDone.Wait()
	t.Logf("outcomes of %d trials: %v", trials, outcomes)
	for _, id := range created {
		var d docJSON
		st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
		if d.File == nil {
			t.Errorf("document %s was created with its file and lost it", id)
			continue
		}
		if r := st.Req("GET", "/public/documents/"+id+"/download", nil); r.Status != 200 {
			t.Errorf("document %s: download %d %s", id, r.Status, r.Body)
		}
	}
}

// trial sends the deletion of m and the creation of a document naming it
// at the same moment, one of them shifted by up to 3 ms.
func trial(t *testing.T, st *Stack, i int, m string, mu *sync.Mutex, outcomes map[string]int, created *[]string) {
	shift := time.Duration(rand.IntN(3000)) * time.Microsecond
	var del, cre Response
	var wg sync.WaitGroup
	wg.Go(func() {
		if i%2 == 0 {
			time.Sleep(shift)
		}
		del = st.BO("DELETE", "/bo/medias/"+m, nil)
	})
	wg.Go(func() {
		if i%2 == 1 {
			time.Sleep(shift)
		}
		cre = st.BO("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "Race", "fileId": m})
	})
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	outcomes[fmt.Sprintf("delete %d, create %d", del.Status, cre.Status)]++
	switch {
	case del.Status == 204 && cre.Status == 201:
		t.Errorf("trial %d: the media's deletion (204) and a document naming it (201) both succeeded; %s", i, cre.Body)
	case del.Status != 204 && del.Status != 409:
		t.Errorf("trial %d: delete answered %d %s", i, del.Status, del.Body)
	case cre.Status != 201 && cre.Status != 422:
		t.Errorf("trial %d: create answered %d %s", i, cre.Status, cre.Body)
	case cre.Status == 201:
		var d docJSON
		cre.JSON(t, &d)
		*created = append(*created, d.ID)
	}
}
