package library

import "github.com/doclib/services/catalog/internal/document"

// publicOf is what this replica's memory holds of a document, whichever
// way it arrives (a look at the store, or Put): the version the public side
// may see (document.PublicView, the one rule), and a document the public
// side may not see at all (a draft) held as removed, which every public
// read and sync already treat as gone. Back-office reads that need the
// whole document (both versions) read the store.
func publicOf(d document.Document) document.Document {
	v, public := document.PublicView(d)
	if !public {
		v.IsDeleted = true
	}
	return v
}
