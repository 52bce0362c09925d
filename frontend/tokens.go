package frontend

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/store"
)

// TokenNamespace is the store KV namespace of the --http bearer tokens.
const TokenNamespace = "mcp-http-tokens"

// TokenPrefix starts every token, so a leaked one is recognisable (secret
// scanners, logs) as a remotemcp front-end token.
const TokenPrefix = "rmcp_"

// tokenBytes is the token's randomness: 256 bits.
const tokenBytes = 32

// tokenLockName serialises create and revoke across processes, so two
// creates of one name cannot both succeed.
const tokenLockName = "mcp-http-tokens"

// tokenName is what a token may be called: a short label, safe to print
// in a table and to use as a KV key.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrTokenExists is returned by Create for a name already in use.
var ErrTokenExists = errors.New("a token of that name exists")

// ErrTokenName is returned by Create for a name that is not allowed.
var ErrTokenName = errors.New("a name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")

// ErrNoToken is returned by Revoke for an unknown name.
var ErrNoToken = errors.New("no token of that name")

// KV is the part of the store the tokens live in (store.DB).
type KV interface {
	GetKV(ctx context.Context, ns, key string) ([]byte, error)
	PutKV(ctx context.Context, ns, key string, value []byte) error
	ListKV(ctx context.Context, ns string) (map[string][]byte, error)
	DeleteKV(ctx context.Context, ns, key string) error
}

// locker is the store's cross-process lock (store.DB.Lock); a KV
// without it gets no cross-process exclusion.
type locker interface {
	Lock(ctx context.Context, name string) (func(), error)
}

// TokenInfo is what is shown of a token: never the token or its hash.
// Its time is named like every time of the CLI's JSON (…At, UTC); the
// stored record keeps its own name, "created".
type TokenInfo struct {
	Name    string    `json:"name"`
	Created time.Time `json:"createdAt"`
}

// tokenRecord is the stored form. Only the SHA-256 of the token is kept
// (Decided: hashed, not sealed): the token has 256 random bits, so a plain
// hash cannot be reversed, and checking it needs no key.
type tokenRecord struct {
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

// Tokens are the bearer tokens of the Streamable HTTP endpoint.
type Tokens struct {
	kv KV
	// last is the last list of records read, for a store that cannot be
	// read for a moment (Check).
	lastMu sync.Mutex
	last   []tokenRecord
	lastAt time.Time
	// Recheck is how often a long-lived request (a host's SSE stream)
	// checks that its token is still valid; revoked, the stream ends.
	// Default DefaultRecheck.
	Recheck time.Duration
}

// DefaultRecheck is how often an open stream checks its token.
const DefaultRecheck = 5 * time.Second

// NewTokens returns the tokens kept in kv.
func NewTokens(kv KV) *Tokens { return &Tokens{kv: kv, Recheck: DefaultRecheck} }

// whileValid ends ctx's request (cancel) once tok is no longer valid,
// checking every Recheck until ctx ends.
func (t *Tokens) whileValid(ctx context.Context, tok string, cancel context.CancelFunc) {
	every := t.Recheck
	if every <= 0 {
		every = DefaultRecheck
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, ok, err := t.Check(ctx, tok); err == nil && !ok {
			cancel()
			return
		}
	}
}

// Create makes a new token called name and returns it; only its hash is
// stored, so this is the one time it can be seen.
func (t *Tokens) Create(ctx context.Context, name string) (string, error) {
	if !tokenName.MatchString(name) {
		return "", fmt.Errorf("create token %q: %w", name, ErrTokenName)
	}
	unlock, err := t.lock(ctx)
	if err != nil {
		return "", fmt.Errorf("create token %q: %w", name, err)
	}
	defer unlock()
	if _, err := t.kv.GetKV(ctx, TokenNamespace, name); err == nil {
		return "", fmt.Errorf("create token %q: %w (revoke it first, or choose another name)", name, ErrTokenExists)
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("create token %q: read the tokens: %w", name, err)
	}
	b := make([]byte, tokenBytes)
	rand.Read(b) // never fails (crypto/rand)
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	rec, err := json.Marshal(tokenRecord{Name: name, SHA256: HashToken(tok), Created: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return "", fmt.Errorf("create token %q: %w", name, err)
	}
	if err := t.kv.PutKV(ctx, TokenNamespace, name, rec); err != nil {
		return "", fmt.Errorf("create token %q: store it: %w", name, err)
	}
	return tok, nil
}

// List returns the tokens' names and creation times, by name.
func (t *Tokens) List(ctx context.Context) ([]TokenInfo, error) {
	recs, err := t.records(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]TokenInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, TokenInfo{Name: r.Name, Created: r.Created})
	}
	slices.SortFunc(out, func(a, b TokenInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Revoke removes the token called name; ErrNoToken if there is none. A
// running endpoint refuses it from its next request on (Check reads the
// store every time).
func (t *Tokens) Revoke(ctx context.Context, name string) error {
	unlock, err := t.lock(ctx)
	if err != nil {
		return fmt.Errorf("revoke token %q: %w", name, err)
	}
	defer unlock()
	if _, err := t.kv.GetKV(ctx, TokenNamespace, name); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("revoke token %q: %w (see \"remotemcp mcp token list\")", name, ErrNoToken)
	} else if err != nil {
		return fmt.Errorf("revoke token %q: read the tokens: %w", name, err)
	}
	if err := t.kv.DeleteKV(ctx, TokenNamespace, name); err != nil {
		return fmt.Errorf("revoke token %q: %w", name, err)
	}
	return nil
}

// StaleGrace is how old the last list of tokens read may be for Check to
// use it while the store cannot be read (a gateway's PostgreSQL
// restarting): hosts go on meanwhile. A token revoked since was revoked
// through a write the store took, so it is read again, and refused, as
// soon as the store answers; only a revocation by another process during
// the grace can wait that long.
const StaleGrace = 5 * time.Minute

// Check reports which token tok is, if any. It reads the store on every
// call, so a revocation by another process takes effect at once, and it
// compares the hash with every stored one in constant time. While the
// store cannot be read, the last list read (at most StaleGrace old) is
// used.
func (t *Tokens) Check(ctx context.Context, tok string) (name string, ok bool, err error) {
	recs, err := t.records(ctx)
	t.lastMu.Lock()
	switch {
	case err == nil:
		t.last, t.lastAt = recs, time.Now()
	case t.last != nil && time.Since(t.lastAt) <= StaleGrace && ctx.Err() == nil:
		recs, err = t.last, nil
	}
	t.lastMu.Unlock()
	if err != nil {
		return "", false, fmt.Errorf("check the token: %w", err)
	}
	got := sha256.Sum256([]byte(tok))
	for _, r := range recs {
		want, err := hex.DecodeString(r.SHA256)
		if err != nil || len(want) != len(got) {
			continue // a damaged record matches nothing
		}
		// No early exit: the time taken does not say which record matched.
		if subtle.ConstantTimeCompare(got[:], want) == 1 && !ok {
			name, ok = r.Name, true
		}
	}
	return name, ok, nil
}

// users are the user ids (hashes) of the valid tokens.
func (t *Tokens) users(ctx context.Context) (map[string]bool, error) {
	recs, err := t.records(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the tokens: %w", err)
	}
	out := make(map[string]bool, len(recs))
	for _, r := range recs {
		out[r.SHA256] = true
	}
	return out, nil
}

// records reads every stored token.
func (t *Tokens) records(ctx context.Context) ([]tokenRecord, error) {
	kv, err := t.kv.ListKV(ctx, TokenNamespace)
	if err != nil {
		return nil, err
	}
	out := make([]tokenRecord, 0, len(kv))
	for k, v := range kv {
		var r tokenRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("token %q: %w", k, err)
		}
		r.Name = k
		out = append(out, r)
	}
	return out, nil
}

// lock takes the cross-process token lock when the KV has one.
func (t *Tokens) lock(ctx context.Context) (func(), error) {
	if l, ok := t.kv.(locker); ok {
		return l.Lock(ctx, tokenLockName)
	}
	return func() {}, nil
}

// HashToken is the stored form of a token (the "sha256" of its record):
// a gateway finds the user a token belongs to by it.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}
