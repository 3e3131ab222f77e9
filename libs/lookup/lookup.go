// Package lookup is the protocol of the internal lookups by which one
// service asks another which of some ids exist (the catalog asks taxonomy
// about tags and media about media): GET <path>?ids=a,b&ids=c, answered
// with a JSON array of the records that exist, in no particular order.
package lookup

import (
	"fmt"
	"net/url"
	"strings"
)

// MaxIDs is how many ids one lookup may ask about; a client with more asks
// in chunks of this size.
const MaxIDs = 500

// IDs returns the ids a lookup asks about: every ids parameter, split at
// commas, empty parts dropped. Ids are taken exactly as sent (no id has a
// space or a comma, so " a" is an id that does not exist). More than
// MaxIDs is an error, for a 400.
func IDs(q url.Values) ([]string, error) {
	var ids []string
	for _, v := range q["ids"] {
		for _, id := range strings.Split(v, ",") {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > MaxIDs {
		return nil, fmt.Errorf("at most %d ids per lookup (got %d)", MaxIDs, len(ids))
	}
	return ids, nil
}

// Query returns the query string that asks about ids (at most MaxIDs).
func Query(ids []string) string {
	q := url.Values{}
	for _, id := range ids {
		q.Add("ids", id)
	}
	return q.Encode()
}
