package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// KVOwner returns the user one of whose records in namespace ns has the
// top-level JSON member field equal to value: how a gateway finds whose
// host token a request carries (the record holds the token's hash, never
// the token). ErrNotFound when no user has one; a value held by two users
// is refused too, so a lookup never picks one of them at random.
//
// It runs on every request of a gateway's hosts: ns and field go into the
// statement as literals (they are names, checked), so that PostgreSQL
// uses the index of the host tokens' hashes (schema 3) instead of reading
// every record of ns.
func (p *Postgres) KVOwner(ctx context.Context, ns, field, value string) (string, error) {
	if !kvName.MatchString(ns) || !kvName.MatchString(field) {
		return "", fmt.Errorf("store: find the owner of a %q record by %q: not a namespace and member name", ns, field)
	}
	q := fmt.Sprintf(`SELECT user_id FROM kv WHERE namespace = '%s' AND (value::jsonb ->> '%s') = $1 LIMIT 2`, ns, field)
	rows, err := p.db.QueryContext(ctx, q, value)
	if err != nil {
		return "", fmt.Errorf("store: find the owner of a %s record: %w", ns, p.root.unavailable(err))
	}
	defer rows.Close()
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return "", fmt.Errorf("store: find the owner of a %s record: %w", ns, p.root.unavailable(err))
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("store: find the owner of a %s record: %w", ns, p.root.unavailable(err))
	}
	switch len(users) {
	case 0:
		return "", fmt.Errorf("store: find the owner of a %s record: %w", ns, ErrNotFound)
	case 1:
		return users[0], nil
	}
	return "", fmt.Errorf("store: find the owner of a %s record: more than one user holds it, so it is no one's: %w", ns, ErrNotFound)
}

// kvName is what KVOwner takes as a namespace or member name.
var kvName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// RedactDSN is a PostgreSQL connection string without its password, for
// messages.
func RedactDSN(dsn string) string { return redactDSN(dsn) }

// ErrUnavailable: the gateway's database cannot be reached just now (down,
// restarting, the connection cut). Nothing was written by the refused
// operation; it may be tried again once the database is back.
var ErrUnavailable = errors.New("the gateway's database cannot be reached; nothing was written, try again when it is back")

// unavailable wraps err with ErrUnavailable when it is a PostgreSQL
// connection failure rather than an answer of the database.
func (s *DB) unavailable(err error) error {
	if err == nil || s.d != postgresDialect || errors.Is(err, ErrUnavailable) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !strings.HasPrefix(pe.Code, "57P") && !strings.HasPrefix(pe.Code, "08") {
		return err // an answer: a constraint, a syntax error … (57P: shutting down; 08: connection)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || pgconn.SafeToRetry(err) ||
		errors.As(err, &pe) || strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset") {
		// The driver's words name the database's host, socket, user and
		// database: the operator's, in the log; a person (whose request
		// this answers, through the page or a host) is told only that
		// the database is away.
		if s.pg != nil {
			s.pg.logUnavailable(err)
		}
		return &unavailableError{cause: err}
	}
	return err
}

// unavailableError is ErrUnavailable with the driver's error kept for
// errors.As (never in its text).
type unavailableError struct{ cause error }

func (e *unavailableError) Error() string   { return ErrUnavailable.Error() }
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.cause} }

// unavailableLogEvery spaces the log lines of an outage: every request
// fails alike while it lasts.
const unavailableLogEvery = 5 * time.Second

// logUnavailable logs why the database cannot be reached, at most once
// per unavailableLogEvery.
func (p *Postgres) logUnavailable(err error) {
	now := time.Now().UnixNano()
	last := p.unavailLogged.Load()
	if now-last < int64(unavailableLogEvery) || !p.unavailLogged.CompareAndSwap(last, now) {
		return
	}
	p.log.Warn("store: the gateway's database cannot be reached", "db", p.root.path, "err", err)
}

// ServerCounts returns how many servers each user has (users without one
// are absent): what an admin sees of who uses the gateway, never a
// server's address or secret.
func (p *Postgres) ServerCounts(ctx context.Context) (map[string]int, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT user_id, count(*) FROM servers GROUP BY user_id`)
	if err != nil {
		return nil, fmt.Errorf("store: count servers: %w", p.root.unavailable(err))
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			id string
			n  int
		)
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("store: count servers: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: count servers: %w", err)
	}
	return out, nil
}
