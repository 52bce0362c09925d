package hostperm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// KV is the part of the store the broker needs; *store.DB implements it.
// Values are JSON.
type KV interface {
	PutKV(ctx context.Context, namespace, key string, value []byte) error
	// GetKV returns an error wrapping store.ErrNotFound for a missing key.
	GetKV(ctx context.Context, namespace, key string) ([]byte, error)
	ListKV(ctx context.Context, namespace string) (map[string][]byte, error)
	// DeleteKV succeeds for a missing key.
	DeleteKV(ctx context.Context, namespace, key string) error
}

// Subscriber is the store's change feed; *store.DB implements it. When
// the KV passed to New implements it too, the broker caches grants in memory
// (see Broker); otherwise every check reads the KV.
type Subscriber interface {
	Subscribe(ctx context.Context) <-chan store.Change
}

// Options tune New. The zero value is fine.
type Options struct {
	// MaxPending bounds the pending approvals kept; the least recently seen
	// are dropped first. 0 means DefaultMaxPending.
	MaxPending int
	// Now is the clock for GrantedAt, FirstSeen and LastSeen; nil means
	// time.Now.
	Now func() time.Time
	// Ask, when set, puts a refused origin to the person at once (a
	// terminal prompt in the CLI): true is their explicit grant, recorded
	// with ByPrompt, and the request goes ahead. Nil, or false, leaves a
	// pending approval and fails the request. Never set it to something
	// that answers without a person, except where a harness plays one.
	Ask func(ctx context.Context, refused PermissionRequiredError) bool
}

// ErrInvalidOrigin is wrapped by every error about an origin or URL that
// cannot be parsed, next to the *config.FieldError that says what is wrong.
var ErrInvalidOrigin = errors.New("invalid origin")

// Broker is the HostPermissionBroker. It is safe for concurrent use, and
// several Brokers (in this or other processes) may share one data directory.
//
// Grant cache. Every outbound request is checked, so granted origins are
// cached in memory. A cache must notice what other processes do:
//
//   - a grant elsewhere (`remotemcp grants approve` while the daemon runs)
//     is noticed at once, because a miss always re-reads the KV: only
//     positive answers are cached, and refusals are rare and already cost a
//     KV write (the pending entry);
//   - a revoke elsewhere must not be outlived by a cached "yes", and
//     re-reading on a miss alone cannot notice it. So the cache is cleared
//     whenever the store's change feed reports a write to NamespaceGrants
//     (or a write it cannot attribute). The feed is drained without blocking
//     at the start of each check instead of by a goroutine of our own, so
//     the broker owns no goroutine; the store's poller reports other
//     processes' writes within a few store.Options.PollInterval, which bounds
//     how long a revoke made by another process can lag. A revoke through
//     this Broker takes effect at once. If the feed ends (Close, or the
//     store closed), the broker stops caching and reads the KV every time.
//
// While the store cannot be reached (store.ErrUnavailable: a gateway's
// PostgreSQL restarting), a grant this broker read from it within the
// last staleGrace is still taken, so the requests of connected servers go
// on; everything else fails closed as before.
type Broker struct {
	kv         KV
	ask        func(context.Context, PermissionRequiredError) bool
	askMu      sync.Mutex
	sub        Subscriber // nil: no cache
	now        func() time.Time
	maxPending int

	mu sync.Mutex
	// cache holds origins known to be granted; trusted only while feed is
	// open.
	cache map[string]struct{}
	// gen is bumped whenever the cache is cleared or an entry removed, so a
	// check that read the KV before that does not put back a stale "yes".
	gen  uint64
	feed <-chan store.Change
	// confirmed is when each origin's grant was last read from the
	// store. It outlives the cache's clearing by writes the feed cannot
	// attribute, and is used only while the store cannot be reached
	// (store.ErrUnavailable: a gateway's PostgreSQL restarting), so the
	// calls of connected servers go on (issue #23). A revoke through this
	// broker or a read that finds no grant ends it (a revoke by another
	// process is seen at the next read that reaches the store);
	// staleGrace bounds it.
	confirmed map[string]time.Time
	started   bool // Subscribe was called (or never will be: closed)
	dead      bool // feed ended: no caching from now on
	cancel    context.CancelFunc

	// pmu serializes this Broker's read-modify-write of pending entries.
	// Across processes the updates may race; the worst outcome is a lost
	// Count increment or one entry over the bound until the next insert.
	pmu sync.Mutex
}

// New returns a Broker over kv. If kv also implements Subscriber, grants
// are cached (see Broker) and Close should be called when the Broker is no
// longer needed.
func New(kv KV, opts Options) *Broker {
	b := &Broker{
		kv:         kv,
		ask:        opts.Ask,
		now:        opts.Now,
		maxPending: opts.MaxPending,
		cache:      make(map[string]struct{}),
		confirmed:  make(map[string]time.Time),
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.maxPending <= 0 {
		b.maxPending = DefaultMaxPending
	}
	if s, ok := kv.(Subscriber); ok {
		b.sub = s
	}
	return b
}

// Close ends the broker's change-feed subscription. The Broker keeps
// working afterwards, without its cache.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started, b.dead = true, true
	if b.cancel != nil {
		b.cancel()
	}
	b.feed = nil
	clear(b.cache)
	clear(b.confirmed)
	b.gen++
	return nil
}

// cacheUsableLocked subscribes on first use, applies the changes the feed
// has delivered since the last call, and reports whether the cache may be
// trusted. b.mu must be held.
func (b *Broker) cacheUsableLocked() bool {
	if b.sub == nil || b.dead {
		return false
	}
	if !b.started {
		// Subscribing lazily keeps one-shot users (a CLI command that only
		// grants) from starting the store's poller.
		b.started = true
		ctx, cancel := context.WithCancel(context.Background())
		b.cancel = cancel
		// Subscribe returns once the feed reports every later write, so
		// nothing the cache is filled with from now on can be missed.
		b.feed = b.sub.Subscribe(ctx)
	}
	for {
		select {
		case c, ok := <-b.feed:
			if !ok {
				b.dead, b.feed = true, nil
				clear(b.cache)
				clear(b.confirmed)
				b.gen++
				return false
			}
			if c.RereadAll() || c.Namespace == NamespaceGrants {
				clear(b.cache)
				b.gen++
			}
		default:
			return true
		}
	}
}

// staleGrace is how long after its last reading a grant is still taken
// while the store cannot be reached.
const staleGrace = 5 * time.Minute

// stillConfirmed reports whether origin's grant was read from the store
// within staleGrace, for a check made while the store cannot be reached.
func (b *Broker) stillConfirmed(origin string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.confirmed[origin]
	return ok && !b.dead && b.now().Sub(at) < staleGrace
}

// allowed reports whether the canonical origin has a grant.
func (b *Broker) allowed(ctx context.Context, origin string) (bool, error) {
	b.mu.Lock()
	useCache := b.cacheUsableLocked()
	if _, hit := b.cache[origin]; useCache && hit {
		b.mu.Unlock()
		return true, nil
	}
	gen := b.gen
	b.mu.Unlock()

	v, err := b.kv.GetKV(ctx, NamespaceGrants, origin)
	if errors.Is(err, store.ErrNotFound) {
		b.mu.Lock()
		delete(b.confirmed, origin)
		b.mu.Unlock()
		return false, nil
	}
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) && b.stillConfirmed(origin) {
			return true, nil
		}
		return false, fmt.Errorf("read grant: %w", err)
	}
	if _, err := decodeGrant(origin, v); err != nil {
		// Fail closed: a damaged record is no evidence of a user's grant.
		return false, err
	}
	b.mu.Lock()
	if useCache && b.gen == gen && !b.dead {
		b.cache[origin] = struct{}{}
		b.confirmed[origin] = b.now()
	}
	b.mu.Unlock()
	return true, nil
}

// Allowed reports whether the origin of rawURL (an origin such as
// https://as.example.com, or any absolute http(s) URL) has a grant.
func (b *Broker) Allowed(ctx context.Context, rawURL string) (bool, error) {
	origin, err := originOf(rawURL)
	if err != nil {
		return false, err
	}
	ok, err := b.allowed(ctx, origin)
	if err != nil {
		return false, fmt.Errorf("hostperm: %s: %w", origin, err)
	}
	return ok, nil
}

// Check is the guard: it returns nil if the origin of rawURL has a grant.
// Otherwise it records a pending approval for (origin, purpose, serverID)
// and returns a *PermissionRequiredError (joined with the recording error
// if that failed, so errors.As still finds it). A URL that cannot be parsed
// is refused with an error wrapping ErrInvalidOrigin, and a store failure is
// refused with that error: the guard fails closed.
func (b *Broker) Check(ctx context.Context, rawURL string, purpose Purpose, serverID string) error {
	origin, err := originOf(rawURL)
	if err != nil {
		return err
	}
	return b.checkOrigin(ctx, origin, purpose, serverID)
}

func (b *Broker) checkOrigin(ctx context.Context, origin string, purpose Purpose, serverID string) error {
	ok, err := b.allowed(ctx, origin)
	if err != nil {
		return fmt.Errorf("hostperm: check %s: %w", origin, err)
	}
	if ok {
		return nil
	}
	perr := &PermissionRequiredError{Origin: origin, Purpose: purpose, ServerID: serverID}
	if b.ask != nil {
		// One question at a time: concurrent requests to the same origin
		// wait for the first answer instead of asking again.
		b.askMu.Lock()
		ok, err := b.allowed(ctx, origin)
		if err == nil && !ok && b.ask(ctx, *perr) {
			err = b.Grant(ctx, origin, ByPrompt)
			ok = err == nil
		}
		b.askMu.Unlock()
		if ok {
			return nil
		}
	}
	if err := b.recordPending(ctx, perr); err != nil {
		return errors.Join(perr, fmt.Errorf("hostperm: record pending approval: %w", err))
	}
	return perr
}

// Grant allows remotemcp to talk to origin. Call it only from an explicit
// user action, and say which in by (BySettingsPage, ByCLI, ByServersAdd, or
// another string starting with "user:"). origin must be an origin
// (scheme://host[:port], an optional trailing "/"); it is stored in
// canonical form, so HTTPS://Example.COM:443 grants https://example.com.
// A path is refused rather than dropped, so that nobody believes a grant is
// limited to one path. Granting an origin that already has a grant keeps
// the first one. Pending approvals for the origin are removed.
func (b *Broker) Grant(ctx context.Context, origin, by string) error {
	o, err := parseOrigin(origin)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(by, byPrefix) {
		return fmt.Errorf("hostperm: grant %s: by %q does not name a user action; it must start with %q, such as %q",
			o, by, byPrefix, ByCLI)
	}
	v, err := b.kv.GetKV(ctx, NamespaceGrants, o)
	switch {
	case err == nil:
		if _, derr := decodeGrant(o, v); derr != nil {
			break // damaged: overwrite it below
		}
		return b.dismiss(ctx, o)
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("hostperm: grant %s: %w", o, err)
	}
	rec, err := json.Marshal(Grant{Origin: o, GrantedAt: b.now().UTC(), By: by})
	if err != nil {
		return fmt.Errorf("hostperm: grant %s: %w", o, err)
	}
	if err := b.kv.PutKV(ctx, NamespaceGrants, o, rec); err != nil {
		return fmt.Errorf("hostperm: grant %s: %w", o, err)
	}
	// The cache is not filled here: the next check misses and reads the
	// grant back, which keeps all cache writes on one path (allowed).
	if err := b.dismiss(ctx, o); err != nil {
		return fmt.Errorf("hostperm: granted %s, but clearing its pending approvals failed: %w", o, err)
	}
	return nil
}

// Revoke removes the grant of origin (written as for Grant). Requests to it
// are refused from then on; connections and streams already open are not
// closed here. It returns an error wrapping ErrNotGranted if there was no
// grant.
func (b *Broker) Revoke(ctx context.Context, origin string) error {
	o, err := parseOrigin(origin)
	if err != nil {
		return err
	}
	if _, err := b.kv.GetKV(ctx, NamespaceGrants, o); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("hostperm: revoke %s: %w", o, ErrNotGranted)
	} else if err != nil {
		return fmt.Errorf("hostperm: revoke %s: %w", o, err)
	}
	err = b.kv.DeleteKV(ctx, NamespaceGrants, o)
	// Forget the origin after the delete (and even if it failed, when the
	// outcome is unknown): a check that read the grant before the delete
	// then sees gen moved and does not cache it again.
	b.mu.Lock()
	delete(b.cache, o)
	delete(b.confirmed, o)
	b.gen++
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("hostperm: revoke %s: %w", o, err)
	}
	return nil
}

// Grants returns every grant, sorted by origin. A damaged record is left
// out and reported in the error, next to the grants that could be read, so
// the settings page can still show them (and the user revoke the damaged
// one by its origin).
func (b *Broker) Grants(ctx context.Context) ([]Grant, error) {
	all, err := b.kv.ListKV(ctx, NamespaceGrants)
	if err != nil {
		return nil, fmt.Errorf("hostperm: list grants: %w", err)
	}
	out := make([]Grant, 0, len(all))
	var errs []error
	for k, v := range all {
		g, err := decodeGrant(k, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b Grant) int { return strings.Compare(a.Origin, b.Origin) })
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("hostperm: list grants: %w", err)
	}
	return out, nil
}

// Pending returns the pending approvals, most recently seen first. Damaged
// records are skipped and reported as in Grants.
func (b *Broker) Pending(ctx context.Context) ([]Pending, error) {
	all, err := b.kv.ListKV(ctx, NamespacePending)
	if err != nil {
		return nil, fmt.Errorf("hostperm: list pending: %w", err)
	}
	out := make([]Pending, 0, len(all))
	var errs []error
	for k, v := range all {
		p, err := decodePending(k, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Pending) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen),
			strings.Compare(a.Origin, b.Origin),
			strings.Compare(string(a.Purpose), string(b.Purpose)),
			strings.Compare(a.ServerID, b.ServerID))
	})
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("hostperm: list pending: %w", err)
	}
	return out, nil
}

// DismissPending removes every pending approval for origin (written as for
// Grant) without granting it. A later refused request records it again.
func (b *Broker) DismissPending(ctx context.Context, origin string) error {
	o, err := parseOrigin(origin)
	if err != nil {
		return err
	}
	if err := b.dismiss(ctx, o); err != nil {
		return fmt.Errorf("hostperm: dismiss %s: %w", o, err)
	}
	return nil
}

// dismiss deletes the pending entries of the canonical origin o.
func (b *Broker) dismiss(ctx context.Context, o string) error {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	all, err := b.kv.ListKV(ctx, NamespacePending)
	if err != nil {
		return err
	}
	for k := range all {
		if ko, _, _, ok := splitPendingKey(k); ok && ko == o {
			if err := b.kv.DeleteKV(ctx, NamespacePending, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordPending adds or refreshes the pending entry of a refusal, keeping
// at most b.maxPending entries.
func (b *Broker) recordPending(ctx context.Context, e *PermissionRequiredError) error {
	key := pendingKey(e.Origin, e.Purpose, e.ServerID)
	b.pmu.Lock()
	defer b.pmu.Unlock()
	now := b.now().UTC()

	v, err := b.kv.GetKV(ctx, NamespacePending, key)
	switch {
	case err == nil:
		if p, derr := decodePending(key, v); derr == nil {
			p.LastSeen = now
			p.Count++
			return b.putPending(ctx, key, p)
		}
		// Damaged: replace it with a fresh entry below.
	case !errors.Is(err, store.ErrNotFound):
		return err
	}

	all, err := b.kv.ListKV(ctx, NamespacePending)
	if err != nil {
		return err
	}
	delete(all, key)
	if excess := len(all) - (b.maxPending - 1); excess > 0 {
		type aged struct {
			key  string
			seen time.Time // zero for a damaged entry, which goes first
		}
		olds := make([]aged, 0, len(all))
		for k, v := range all {
			p, _ := decodePending(k, v)
			olds = append(olds, aged{k, p.LastSeen})
		}
		slices.SortFunc(olds, func(a, b aged) int {
			return cmp.Or(a.seen.Compare(b.seen), strings.Compare(a.key, b.key))
		})
		for _, old := range olds[:excess] {
			if err := b.kv.DeleteKV(ctx, NamespacePending, old.key); err != nil {
				return err
			}
		}
	}
	return b.putPending(ctx, key, Pending{
		Origin: e.Origin, Purpose: e.Purpose, ServerID: e.ServerID,
		FirstSeen: now, LastSeen: now, Count: 1,
	})
}

func (b *Broker) putPending(ctx context.Context, key string, p Pending) error {
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return b.kv.PutKV(ctx, NamespacePending, key, v)
}

// pendingKey is the dedup key of a pending entry: a JSON array, so no
// choice of separator can make two different triples collide.
func pendingKey(origin string, purpose Purpose, serverID string) string {
	k, _ := json.Marshal([]string{origin, string(purpose), serverID})
	return string(k)
}

func splitPendingKey(k string) (origin string, purpose Purpose, serverID string, ok bool) {
	var parts []string
	if json.Unmarshal([]byte(k), &parts) != nil || len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], Purpose(parts[1]), parts[2], true
}

// decodeGrant reads a grant record and checks that it is the one stored
// under key, so a record copied to another key grants nothing.
func decodeGrant(key string, v []byte) (Grant, error) {
	var g Grant
	if err := json.Unmarshal(v, &g); err != nil {
		return Grant{}, fmt.Errorf("damaged grant record for %s: %w", key, err)
	}
	if g.Origin != key {
		return Grant{}, fmt.Errorf("damaged grant record for %s: it names origin %q", key, g.Origin)
	}
	return g, nil
}

func decodePending(key string, v []byte) (Pending, error) {
	var p Pending
	if err := json.Unmarshal(v, &p); err != nil {
		return Pending{}, fmt.Errorf("damaged pending record %s: %w", key, err)
	}
	if o, pu, s, ok := splitPendingKey(key); !ok || o != p.Origin || pu != p.Purpose || s != p.ServerID {
		return Pending{}, fmt.Errorf("damaged pending record %s: it does not match its key", key)
	}
	return p, nil
}

// originOf returns the canonical origin of an absolute http(s) URL. Only the
// scheme and authority are handed to config.Origin: the guard decides where
// a connection goes, and a path that net/url accepts but config's stricter
// reader does not (a '[' in a path, say) must not turn a granted origin
// into an error.
func originOf(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		problem := "is not a valid URL"
		if ue, ok := errors.AsType[*url.Error](err); ok {
			problem += ": " + ue.Err.Error()
		}
		return "", invalid(rawURL, &config.FieldError{Field: "url", Problem: problem})
	}
	return originOfURL(rawURL, u)
}

func originOfURL(raw string, u *url.URL) (string, error) {
	if u.Scheme == "" || u.Host == "" {
		// Let config explain the slip ("has no scheme; write it in full ...").
		_, err := config.Origin(raw)
		if err == nil {
			err = &config.FieldError{Field: "url", Problem: "is not an absolute http(s) URL"}
		}
		return "", invalid(raw, err)
	}
	if u.User != nil {
		// Go's transport would send it as basic auth; config refuses it in
		// server URLs for the same reason.
		return "", invalid(raw, &config.FieldError{Field: "url", Problem: "must not contain user information (user:password@)"})
	}
	o, err := config.Origin(u.Scheme + "://" + u.Host)
	if err != nil {
		return "", invalid(raw, err)
	}
	return o, nil
}

// parseOrigin reads an origin as the user writes it for Grant, Revoke and
// DismissPending: scheme://host[:port] with at most a trailing "/".
func parseOrigin(raw string) (string, error) {
	canon, err := config.CanonicalResource(raw)
	if err != nil {
		return "", invalid(raw, err)
	}
	o, err := config.Origin(canon)
	if err != nil {
		return "", invalid(raw, err)
	}
	if canon != o && canon != o+"/" {
		return "", invalid(raw, &config.FieldError{Field: "origin",
			Problem: fmt.Sprintf("has a path or query; give only the origin %s (a grant covers every path on it)", o)})
	}
	return o, nil
}

// invalid builds the error for an unparsable origin or URL. The input is
// quoted and cut short: it may be junk of any size.
func invalid(raw string, err error) error {
	const max = 120
	if len(raw) > max {
		raw = raw[:max] + "..."
	}
	return fmt.Errorf("hostperm: %w %q: %w", ErrInvalidOrigin, raw, err)
}

var errNoURL = &config.FieldError{Field: "url", Problem: "is missing from the request"}
