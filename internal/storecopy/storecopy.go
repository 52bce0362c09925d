// Package storecopy is "remotemcp store copy" (issue #22, Decided
// "Moving in"): a person's personal store moves into their user of a
// gateway, every secret sealed again for that user (store.Copy), and the
// personal store is left as it was. The command line only parses flags
// and calls Run.
package storecopy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/store"
)

// Options are the command's flags.
type Options struct {
	// DataDir is the personal store's data directory (the source).
	DataDir string
	// DSN is the gateway's PostgreSQL database (--to).
	DSN string
	// GatewayDataDir is the gateway's data directory, where the key file
	// that seals the gateway's secrets lives (--gateway-data-dir).
	GatewayDataDir string
	// User is the email of the gateway user to copy into (--user); the
	// user is added when the gateway has none of that email.
	User string
	// Out gets the summary; Err the progress and notes.
	Out, Err io.Writer
}

// Run copies the personal store in o.DataDir into the gateway user
// o.User of the database o.DSN. It holds the personal data directory's
// daemon lock throughout, so no daemon runs on the source while it is
// read (one that did could refresh an OAuth token after the copy took
// the old one). Nothing is written to the gateway unless everything is
// (store.Copy); a user this run added is removed again when the copy
// fails. Every error names its step.
//
// Long: the copy's steps in order (lock, open the source, open the
// gateway, find or add the user, copy, report), each undone by a defer
// of this one function when a later step fails.
func Run(ctx context.Context, o Options) error {
	switch {
	case o.DSN == "":
		return exit.Usagef("--to is required: the gateway's database (postgres://…)")
	case o.User == "":
		return exit.Usagef("--user is required: the email of the gateway user to copy into")
	case o.GatewayDataDir == "":
		return exit.Usagef("--gateway-data-dir is required: the gateway's data directory, which keeps the key file that seals its secrets")
	}
	email, err := store.NormalizeEmail(o.User)
	if err != nil {
		return exit.Usagef("--user: %v", err)
	}
	say := func(format string, args ...any) { fmt.Fprintf(o.Err, "store copy: "+format+"\n", args...) }

	dir, err := personalStore(o.DataDir)
	if err != nil {
		return fmt.Errorf("store copy: find the personal store: %w", err)
	}
	release, err := daemon.HoldOwnerLock(dir, "remotemcp store copy")
	if err != nil {
		return fmt.Errorf("store copy: the personal store must not be in use (stop its daemon first): %w", err)
	}
	defer release()
	src, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		return fmt.Errorf("store copy: open the personal store: %w", err)
	}
	defer src.Close()

	where := store.RedactDSN(o.DSN)
	keyPath := filepath.Join(o.GatewayDataDir, "key")
	_, statErr := os.Stat(keyPath)
	pg, err := store.OpenPostgres(ctx, o.DSN, store.PostgresOptions{
		KeyDir: o.GatewayDataDir,
		OnWait: func(err error, in time.Duration) {
			say("PostgreSQL %s cannot be reached yet (%v); trying again in %s (Ctrl-C stops)", where, err, in.Round(100*time.Millisecond))
		},
	})
	if err != nil {
		return fmt.Errorf("store copy: open the gateway's database: %w", err)
	}
	defer pg.Close()
	if errors.Is(statErr, fs.ErrNotExist) {
		say("created the gateway's key file %s: back it up; every gateway process on this database needs it", keyPath)
	}

	u, err := pg.UserByEmail(ctx, email)
	added := false
	if errors.Is(err, store.ErrNotFound) {
		if u, err = pg.AddUser(ctx, email); err == nil {
			added = true
			say("added the gateway user %s (%s)", u.Email, u.ID)
		}
	}
	if err != nil {
		return fmt.Errorf("store copy: find the gateway user %s: %w", email, err)
	}
	undo := func(err error) error {
		if !added {
			return err
		}
		if rerr := pg.RemoveUser(context.WithoutCancel(ctx), u.ID); rerr != nil {
			return fmt.Errorf("%w (and the gateway user %s this copy added could not be removed again: %w)", err, u.Email, rerr)
		}
		say("removed the gateway user %s again, which this copy had added", u.Email)
		return err
	}
	if err := checkHostTokens(ctx, src, pg, u); err != nil {
		return undo(fmt.Errorf("store copy: check the host tokens: %w", err))
	}
	dst, err := pg.User(ctx, u.ID)
	if err != nil {
		return undo(fmt.Errorf("store copy: open the gateway user %s: %w", u.Email, err))
	}
	defer dst.Close()

	say("copying %s into the gateway user %s of PostgreSQL %s", filepath.Join(dir, store.DBFileName), u.Email, where)
	r, err := store.Copy(ctx, src, dst, store.CopyOptions{Progress: func(step store.CopyStep, r store.CopyReport) {
		switch step {
		case store.CopyRead:
			say("read the personal store: %s", r)
		case store.CopyCheck:
			say("checked the gateway user %s: no servers yet", u.Email)
		case store.CopyWrite:
			say("wrote everything, %d secret(s) sealed again for %s", r.Secrets, u.Email)
		case store.CopyVerify:
			say("verified: every secret opens for %s as it did in the personal store", u.Email)
		}
	}})
	if err != nil {
		return undo(fmt.Errorf("store copy: copy into %s: %w", u.Email, err))
	}
	fmt.Fprintf(o.Out, "copied %s into the gateway user %s; the personal store %s was left as it was\n", r, u.Email, dir)
	if r.Secrets > 0 {
		say("both stores now hold the same sign-ins; use the gateway from now on: where a server replaces its refresh token at each use, the store that refreshes second must sign in again")
	}
	return nil
}

// personalStore returns the absolute data directory of a personal store
// that exists in dir: it must hold the database and its key file. Open
// would create a store where there is none; a copy must not.
func personalStore(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no data directory: give --data-dir")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, name := range []string{store.DBFileName, "key"} {
		if _, err := os.Stat(filepath.Join(abs, name)); err != nil {
			return "", fmt.Errorf("%s has no personal store (%w); give the data directory of the store to copy with --data-dir", abs, err)
		}
	}
	return abs, nil
}

// checkHostTokens refuses when another gateway user holds a host token
// of the personal store already (copied into that user before): the
// gateway finds a host's person by its token, and a token two users hold
// is no one's, so the copy would take it from both.
func checkHostTokens(ctx context.Context, src *store.DB, pg *store.Postgres, u store.UserInfo) error {
	recs, err := src.ListKV(ctx, frontend.TokenNamespace)
	if err != nil {
		return err
	}
	for name, raw := range recs {
		var rec struct {
			SHA256 string `json:"sha256"`
		}
		if json.Unmarshal(raw, &rec) != nil || rec.SHA256 == "" {
			continue // matches no request; copied as it is
		}
		owner, err := pg.KVOwner(ctx, frontend.TokenNamespace, "sha256", rec.SHA256)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if owner != u.ID {
			other, err := pg.UserByID(ctx, owner)
			if err != nil {
				return err
			}
			return fmt.Errorf("the host token %q of the personal store is a token of the gateway user %s already (was this store copied into %s?); nothing was written: revoke it there (\"remotemcp --user %s mcp token revoke %s\") or here first",
				name, other.Email, other.Email, other.Email, name)
		}
	}
	return nil
}
