package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestIndexesServeFerretDBFilters: on a table shaped as FerretDB's, with
// the B-tree indexes FerretDB makes, the filters FerretDB sends (as it
// sends them: the field a bind parameter) are index scans; an index made
// while the trigger was off gets its GIN index at the next start, on the
// same data directory.
func TestIndexesServeFerretDBFilters(t *testing.T) {
	bin, err := Find()
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "doclib-pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil { // "postgres" must enter it when we are root
		t.Fatal(err)
	}
	start := func() (*Cluster, *pgx.Conn) {
		t.Helper()
		c, err := Start(ctx, bin, filepath.Join(dir, "postgres"), &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		url, _, _ := strings.Cut(c.URL, "?") // the pool settings are FerretDB's
		db, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close(context.Background()) })
		return c, db
	}
	c, db := start()
	exec := func(db *pgx.Conn, sql string) {
		t.Helper()
		if _, err := db.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// FerretDB's own DDL for a collection and its indexes
	// (backends/postgresql/metadata/registry.go).
	exec(db, `CREATE SCHEMA s`)
	exec(db, `CREATE TABLE s.c (_jsonb jsonb)`)
	exec(db, `CREATE UNIQUE INDEX c__id_idx ON s.c ((_jsonb->'_id'))`)
	exec(db, `CREATE INDEX c_tags_idx ON s.c ((_jsonb->'tagsIds'))`)
	exec(db, `CREATE INDEX c_file_idx ON s.c (((_jsonb->'file')->'id'))`)
	exec(db, `CREATE INDEX c_compound_idx ON s.c ((_jsonb->'isDeleted'), (_jsonb->'createdAt') DESC)`)
	exec(db, `ALTER EVENT TRIGGER doclib_gin_beside_btree DISABLE`)
	exec(db, `CREATE INDEX c_later_idx ON s.c ((_jsonb->'later'))`)
	exec(db, `ALTER EVENT TRIGGER doclib_gin_beside_btree ENABLE`)
	exec(db, `INSERT INTO s.c SELECT jsonb_build_object('_id', 'd' || i, 'tagsIds', jsonb_build_array('t' || i % 100),
		'file', jsonb_build_object('id', 'm' || i), 'isDeleted', i % 2 = 0, 'createdAt', i, 'later', 'l' || i)
		FROM generate_series(1, 5000) AS i`)
	exec(db, `ANALYZE s.c`)

	// The restart is what gives c_later_idx its GIN index.
	c.Stop()
	_, db = start()

	for _, q := range []struct{ field, value string }{
		{"_id", `"d42"`},
		{"tagsIds", `"t7"`}, // an array containing the value
		{"{file,id}", `"m42"`},
		{"createdAt", `42`}, // a compound index's second field (isDeleted, half the rows, is rightly a scan)
		{"later", `"l42"`},
	} {
		op, typ := "->", "text"
		if strings.HasPrefix(q.field, "{") {
			op, typ = "#>", "text[]"
		}
		exec(db, `PREPARE q(`+typ+`, jsonb) AS SELECT _jsonb FROM s.c WHERE _jsonb`+op+`$1 @> $2`)
		rows, err := db.Query(ctx, `EXPLAIN EXECUTE q('`+q.field+`', '`+q.value+`')`)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		exec(db, `DEALLOCATE q`)
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "Index Scan on ") || !strings.Contains(p, "_gin") {
			t.Errorf("%s = %s: not a scan of a GIN index:\n%s", q.field, q.value, p)
		}
	}
}
