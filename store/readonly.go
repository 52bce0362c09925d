package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A data directory that cannot be written (issue #8 item 12) shows up as
// "permission denied" from the file system or as SQLite's "attempt to
// write a readonly database" / "unable to open database file", none of
// which tells the user which directory is meant or what to do. notWritable
// recognises those and puts a hint in front.

// notWritable returns err unchanged unless it comes from something in dir
// this user cannot write; then it returns an error wrapping both
// ErrDataDirNotWritable and err that names the directory (or the file in
// it) and how to choose another one.
func notWritable(dir string, err error) error {
	if err == nil || errIsOpenRefusal(err) || !writeRefused(err) {
		return err
	}
	what, known := firstNotWritable(dir)
	if !known {
		// The platform cannot tell (no access(2)); the error says a write
		// was refused, so the directory is the best guess.
		what = dir
	} else if what == "" {
		// Everything is writable: the refusal has another cause (a key file
		// of another user, say), which the hint would only obscure.
		return err
	}
	return notWritableError("open", dir, what, err)
}

// notWritableError names what (the data directory dir, or a file in it)
// and what to do; step is the store operation that found it; cause, if
// not nil, is the error the refused write gave.
func notWritableError(step, dir, what string, cause error) error {
	subject := fmt.Sprintf("data directory %s is", dir)
	if what != dir {
		subject = fmt.Sprintf("%s in data directory %s is", filepath.Base(what), dir)
	}
	msg := fmt.Sprintf("store: %s: %s not writable by this user, and remotemcp must write its database and key there; make it writable (chmod u+w %s) or choose another data directory with --data-dir or $%s",
		step, subject, what, EnvHome)
	if cause == nil {
		return fmt.Errorf("%s: %w", msg, ErrDataDirNotWritable)
	}
	return fmt.Errorf("%s: %w (%w)", msg, ErrDataDirNotWritable, cause)
}

// writeRefused reports whether err looks like a write the file system or
// SQLite refused for lack of permission.
func writeRefused(err error) bool {
	if errors.Is(err, fs.ErrPermission) || isReadOnlyFS(err) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // primary result code
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return true
	}
	return false
}

// writablePaths are what Open writes in the data directory besides
// creating files in it: the database and the WAL files SQLite keeps next
// to it. The key file is only read once it exists.
var writablePaths = []string{DBFileName, DBFileName + "-wal", DBFileName + "-shm"}
