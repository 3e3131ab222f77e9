// Package pgcluster runs a private PostgreSQL server for FerretDB's
// postgresql backend: it finds the server binaries installed on the
// machine, initialises a cluster in a directory of the project's, starts it
// on a loopback port as a child process, and prepares the database FerretDB
// uses so that its indexes can serve its queries.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/doclib/libs/devserver"
)

// Database is the database FerretDB keeps its data in.
const Database = "ferretdb"

// PoolSize is FerretDB's PostgreSQL connection pool. FerretDB v1 holds one
// connection for each statement of an update command until the whole
// command is done (msg_update.go defers each iterator's Close in a loop);
// the write gate therefore sends it one statement per command
// (wiregate/update.go). The pool stays well above FerretDB's default of 50
// for what remains: every open cursor holds a connection until it is read
// to the end or closed, and reads run side by side. Idle connections close
// after a minute.
const PoolSize = 500

// Find returns the directory of PostgreSQL's server binaries (initdb and
// postgres side by side): $POSTGRES_BIN_DIR, then the directory of
// pg_ctl or postgres on PATH, then the usual places of Debian/Ubuntu
// (/usr/lib/postgresql/<version>/bin, newest first), RHEL
// (/usr/pgsql-<version>/bin), Homebrew and a source build. It says where
// it looked when it finds none.
func Find() (string, error) {
	var candidates []string
	if d := os.Getenv("POSTGRES_BIN_DIR"); d != "" {
		candidates = append(candidates, d)
	}
	for _, name := range []string{"pg_ctl", "postgres"} {
		if p, err := exec.LookPath(name); err == nil {
			candidates = append(candidates, filepath.Dir(p))
		}
	}
	for _, glob := range []string{
		"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin",
		"/opt/homebrew/opt/postgresql@*/bin", "/usr/local/opt/postgresql@*/bin", "/usr/local/pgsql/bin",
	} {
		found, _ := filepath.Glob(glob)
		slices.SortFunc(found, func(a, b string) int { return versionOf(b) - versionOf(a) })
		candidates = append(candidates, found...)
	}
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) in $POSTGRES_BIN_DIR, on PATH, " +
		"or in /usr/lib/postgresql/*/bin, /usr/pgsql-*/bin, Homebrew's or /usr/local/pgsql/bin")
}

// versionOf returns the first number in a path like
// /usr/lib/postgresql/15/bin, for sorting newest first.
func versionOf(path string) int {
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r < '0' || r > '9' }) {
		if n, err := strconv.Atoi(part); err == nil {
			return n
		}
	}
	return 0
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Cluster is a running PostgreSQL server.
type Cluster struct {
	// URL is FerretDB's connection string to the server's Database.
	URL     string
	Version string
	proc    *devserver.Process
}

// Start runs the server from binDir on a free loopback port, with its
// cluster in dir (initialised the first time), and prepares Database.
// PostgreSQL refuses to run as root: when this process is root the server
// runs as the user "postgres", which then owns dir.
func Start(ctx context.Context, binDir, dir string, out io.Writer) (*Cluster, error) {
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := chownAll(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		// --no-sync: a development cluster, rebuilt if a crash ever breaks it.
		initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
			"-D", dir, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions")
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if b, err := initdb.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb %s: %v: %s", dir, err, strings.TrimSpace(string(b)))
		}
	}
	addr, err := devserver.FreeAddr()
	if err != nil {
		return nil, err
	}
	port := devserver.Port(addr)
	cmd := exec.Command(filepath.Join(binDir, "postgres"), "-D", dir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		// Durability is not wanted of a development database; speed is.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		// FerretDB binds the field name of `_jsonb->$1 @> $2` as a
		// parameter: only a custom plan sees the literal the indexes
		// are built on; a cached generic plan would scan.
		"-c", "plan_cache_mode=force_custom_plan",
		"-c", "shared_buffers=64MB", "-c", "max_connections="+strconv.Itoa(PoolSize+100),
		"-c", "log_min_messages=warning",
	)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for clients).
	proc, err := devserver.StartCmd("postgres", cmd, syscall.SIGINT)
	if err != nil {
		return nil, err
	}
	c := &Cluster{proc: proc}
	base := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/", port)
	if err := c.prepare(ctx, base); err != nil {
		c.Stop()
		return nil, err
	}
	c.URL = fmt.Sprintf("%s%s?pool_max_conns=%d&pool_max_conn_idle_time=1m", base, Database, PoolSize)
	return c, nil
}

// prepare waits for the server, creates Database and installs the index
// trigger (both idempotent).
func (c *Cluster) prepare(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var admin *pgx.Conn
	for {
		var err error
		admin, err = pgx.Connect(ctx, base+"postgres")
		if err == nil {
			break
		}
		select {
		case <-c.proc.Done():
			return errors.New("postgres exited while starting (see its log)")
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer admin.Close(context.Background())
	if err := admin.QueryRow(ctx, "SHOW server_version").Scan(&c.Version); err != nil {
		return err
	}
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+Database); err != nil {
			return fmt.Errorf("create database %s: %w", Database, err)
		}
	}
	db, err := pgx.Connect(ctx, base+Database)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(ctx, ginTrigger); err != nil {
		return fmt.Errorf("install the index trigger: %w", err)
	}
	return nil
}

// ginTrigger adds, beside every B-tree index FerretDB makes on a field
// ((_jsonb -> 'f'), or ((_jsonb -> 'a') -> 'b') for a.b), a GIN
// jsonb_path_ops index on the expression FerretDB's postgresql backend
// filters that field's equality with: `_jsonb->'f' @> value` for a
// top-level field, `_jsonb#>'{a,b}' @> value` for a dotted one (update,
// delete, findAndModify, count and distinct send those; find and aggregate
// only top-level ones). A B-tree index cannot serve @>, a GIN one can
// (FerretDB issue #4646): without it every such query reads the whole
// table. The last statement gives the indexes made before this trigger
// existed (or before it knew dotted fields) theirs, at each start.
//
// A top-level field's GIN index keeps the name it had when only those got
// one, so that pass makes no second one beside it.
const ginTrigger = `
CREATE OR REPLACE FUNCTION doclib_gin_for_index(idx oid) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  tbl text;
  iname text;
  ncols int;
  k int;
  expr text;
  e text;
  p text;
  path text[];
  key text;
BEGIN
  SELECT i.indrelid::regclass::text, n.nspname || '.' || c.relname, i.indnkeyatts
    INTO tbl, iname, ncols
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam
    WHERE i.indexrelid = idx AND a.amname = 'btree';
  IF NOT FOUND THEN
    RETURN;
  END IF;
  FOR k IN 1..ncols LOOP
    -- one key column, e.g. (((_jsonb -> 'a'::text) -> 'b'::text))
    expr := pg_get_indexdef(idx, k, false);
    path := ARRAY(SELECT replace(m[1], '''''', '''')
      FROM regexp_matches(expr, '''((?:[^'']|'''')*)''::text', 'g') AS m);
    CONTINUE WHEN cardinality(path) = 0;
    e := '_jsonb';
    FOREACH p IN ARRAY path LOOP
      e := '(' || e || ' -> ' || quote_literal(p) || '::text)';
    END LOOP;
    CONTINUE WHEN '(' || e || ')' <> expr; -- not a FerretDB field index
    IF cardinality(path) = 1 THEN
      e := format('(_jsonb -> %L)', path[1]);
      key := path[1];
    ELSE
      e := format('(_jsonb #> %L::text[])', path::text);
      key := path::text;
    END IF;
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin (%s jsonb_path_ops)',
      left(iname, 40) || '_' || left(md5(tbl || '.' || key), 12) || '_gin', tbl, e);
  END LOOP;
END
$fn$;
CREATE OR REPLACE FUNCTION doclib_gin_beside_btree() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE INDEX' LOOP
    PERFORM doclib_gin_for_index(r.objid);
  END LOOP;
END
$fn$;
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'doclib_gin_beside_btree') THEN
    CREATE EVENT TRIGGER doclib_gin_beside_btree ON ddl_command_end
      WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION doclib_gin_beside_btree();
  END IF;
END
$do$;
SELECT doclib_gin_for_index(i.indexrelid) FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%';
`

// Stop shuts the server down fast and waits up to 10 s, then kills it.
func (c *Cluster) Stop() { c.proc.Stop() }

// Done is closed when the server has exited.
func (c *Cluster) Done() <-chan struct{} { return c.proc.Done() }

// credential returns whom the server must run as: nil (this process's
// user) unless this process is root, then "postgres".
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New(`running as root, and PostgreSQL refuses to run as root, but there is no user "postgres" to run it as`)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chownAll gives dir and everything in it to uid:gid, and checks that the
// directories above it let that user through.
func chownAll(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the postgres user cannot enter %s (mode %v); run as another user than root, or from a directory others can enter", p, st.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
