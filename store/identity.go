package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"unicode"
)

// Whose file is this? Open must never migrate, or even leave a -wal or
// -shm file next to, a SQLite database of another program that happens to
// sit at <data dir>/remotemcp.db. Before the read-write connection touches
// a file, it is identified: from its header when that carries remotemcp's
// application_id, else by a read-only look through SQLite.

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Offsets of the big-endian 32-bit header fields that PRAGMA user_version
// and PRAGMA application_id read (https://sqlite.org/fileformat.html).
const (
	hdrUserVersion = 60
	hdrAppID       = 68
)

// dbHeader is what the first 100 bytes of the database file say.
type dbHeader struct {
	// empty: no file, or a zero-length one (how SQLite starts a new
	// database); there is nothing to identify.
	empty bool
	// appID is the application_id of the header. It can lag behind the
	// database: a transaction that set it may still be in the -wal file.
	appID uint32
}

// checkHeader refuses a file that is not a SQLite database before SQLite
// gets to open it, so nothing (not even a -wal file) is created next to it.
func checkHeader(path string) (dbHeader, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return dbHeader{empty: true}, nil
	}
	if err != nil {
		return dbHeader{}, fmt.Errorf("store: open database %s: %w", path, err)
	}
	defer f.Close()
	hdr := make([]byte, 100) // the SQLite header is 100 bytes
	n, err := io.ReadFull(f, hdr)
	switch {
	case n == 0 && (err == nil || errors.Is(err, io.EOF)):
		return dbHeader{empty: true}, nil
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return dbHeader{}, fmt.Errorf("store: open database %s: read header: %w", path, err)
	case n < len(hdr) || !bytes.Equal(hdr[:len(sqliteMagic)], sqliteMagic):
		return dbHeader{}, corruptError(path, "not a SQLite database")
	}
	return dbHeader{appID: binary.BigEndian.Uint32(hdr[hdrAppID:])}, nil
}

// dbIdentity is what a SQLite database says about itself.
type dbIdentity struct {
	appID   uint32
	version int64
	// objects are the names of the tables and views, sorted; SQLite's own
	// (sqlite_*) are left out.
	objects []string
}

// ours reports whether the database may be opened read-write and migrated:
// it is remotemcp's, or it is new (no schema, no version, no application
// id). Schema 1 set the application_id and the version in the same
// transaction as the first tables, so every remotemcp database with tables
// has both: a file with tables and application_id 0 is never one of ours,
// not even an old one, and neither is one with remotemcp's id but tables
// at version 0.
func (id dbIdentity) ours() bool {
	switch id.appID {
	case applicationID:
		return id.version != 0 || len(id.objects) == 0
	case 0:
		return id.version == 0 && len(id.objects) == 0
	}
	return false
}

// identityQuery lists the schema objects that make a database "not empty".
const identityQuery = `SELECT name FROM sqlite_schema
	WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
	ORDER BY name`

// readIdentity reads the identity in one read transaction of db, so the
// application id, version and schema come from one snapshot.
func readIdentity(ctx context.Context, db *sql.DB) (dbIdentity, error) {
	var id dbIdentity
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return id, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, identityQuery)
	if err != nil {
		return id, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return id, err
		}
		id.objects = append(id.objects, name)
	}
	if err := rows.Err(); err != nil {
		return id, err
	}
	var appID int64
	if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return id, err
	}
	id.appID = uint32(appID) // SQLite reports the 32 bits as a signed integer
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&id.version); err != nil {
		return id, err
	}
	return id, tx.Commit()
}

// inspect identifies an existing database file without writing anything:
// the connection is read-only, and when no -wal file exists it is also
// immutable, which keeps SQLite from creating -wal and -shm files for a
// database in WAL mode (a plain read-only connection would create them).
// When a -wal file exists, some program has the database open or crashed
// with it open, and what the file holds is only known with the WAL read
// in, so the connection reads it (creating at most a missing -shm).
func inspect(ctx context.Context, path string) (dbIdentity, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if _, err := os.Lstat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		q.Set("immutable", "1")
	}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	db, err := sql.Open("sqlite", fileDSN(path, q))
	if err != nil {
		return dbIdentity{}, fmt.Errorf("store: open database %s: inspect: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	id, err := readIdentity(ctx, db)
	if err != nil {
		if isCorrupt(err) {
			return dbIdentity{}, corruptError(path, err.Error())
		}
		return dbIdentity{}, fmt.Errorf("store: open database %s: inspect: %w", path, err)
	}
	return id, nil
}

// foreignError says that path is some other program's database and what
// to do about it.
func foreignError(path string, id dbIdentity) error {
	what := "no tables"
	if len(id.objects) > 0 {
		what = "tables: " + listNames(id.objects, 8)
	}
	return fmt.Errorf("store: open %s: the file is not a remotemcp database (application_id 0x%08x, user_version %d, %s); remotemcp never changes it — move it away or choose another data directory with --data-dir or $%s: %w",
		path, id.appID, id.version, what, EnvHome, ErrForeignDatabase)
}

// listNames joins at most max names for a message; names that are not
// plain identifiers are quoted and long ones cut, so a hostile schema
// cannot garble or flood the message.
func listNames(names []string, max int) string {
	var b strings.Builder
	for i, n := range names {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(names)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if len(n) > 64 {
			n = n[:64] + "…"
		}
		if n == "" || strings.IndexFunc(n, notPlain) >= 0 {
			n = strconv.Quote(n)
		}
		b.WriteString(n)
	}
	return b.String()
}

func notPlain(r rune) bool {
	return !(r == '_' || r == '-' || r == '.' || r == '…' || unicode.IsLetter(r) || unicode.IsDigit(r))
}
