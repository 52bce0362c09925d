package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

const (
	// LoginTokenTTL is how long a login URL works (once).
	LoginTokenTTL = 5 * time.Minute
	// SessionTTL is how long a settings page session lasts without use.
	SessionTTL = 12 * time.Hour
	// maxLoginTokens bounds the unused login tokens kept: each LoginURL
	// call makes one, and nothing should grow without limit.
	maxLoginTokens = 64
	// maxSessions bounds the live sessions; the oldest go first.
	maxSessions = 64
)

// randomToken returns 256 bits of randomness as text.
func randomToken() string { return rand.Text() + rand.Text() }

// sessions holds the one-time login tokens and the settings page sessions,
// in memory only: a restart of the daemon logs every page out, and nothing
// of either is ever written to disk.
//
// Both maps are keyed by the SHA-256 of the token, so a lookup compares
// hashes of fixed length and the map's timing says nothing useful about a
// guess.
//
// On a gateway, a session belongs to a person (their email, as the
// gateway spells it); a personal daemon's sessions belong to nobody in
// particular.
type sessions struct {
	mu       sync.Mutex
	logins   map[[32]byte]time.Time    // login token hash → expiry
	sessions map[[32]byte]sessionEntry // session hash → expiry (sliding) and person
	max      int                       // the most sessions kept
	now      func() time.Time
}

// sessionEntry is one live session.
type sessionEntry struct {
	exp    time.Time
	person string // "" on a personal daemon
}

func newSessions() *sessions {
	return &sessions{logins: map[[32]byte]time.Time{}, sessions: map[[32]byte]sessionEntry{}, max: maxSessions, now: time.Now}
}

// newLoginToken makes a login token valid once for LoginTokenTTL.
func (s *sessions) newLoginToken() (string, time.Time) {
	tok := randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	expireOld(s.logins, now, maxLoginTokens-1, func(t time.Time) time.Time { return t })
	exp := now.Add(LoginTokenTTL)
	s.logins[sha256.Sum256([]byte(tok))] = exp
	return tok, exp
}

// redeem consumes a login token and returns a new session token, or false
// if the token is unknown, used or expired.
func (s *sessions) redeem(loginToken string) (string, bool) {
	h := sha256.Sum256([]byte(loginToken))
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.logins[h]
	delete(s.logins, h) // single use, even when expired
	now := s.now()
	if !ok || !now.Before(exp) {
		return "", false
	}
	return s.startLocked(now, ""), true
}

// start begins a session of person (a gateway's page, once they signed
// in) and returns its token.
func (s *sessions) start(person string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked(s.now(), person)
}

func (s *sessions) startLocked(now time.Time, person string) string {
	sess := randomToken()
	expireOld(s.sessions, now, s.max-1, sessionEntry.expiry)
	s.sessions[sha256.Sum256([]byte(sess))] = sessionEntry{exp: now.Add(SessionTTL), person: person}
	return sess
}

func (e sessionEntry) expiry() time.Time { return e.exp }

// valid reports whether a session token is live, extending it.
func (s *sessions) valid(sess string) bool {
	_, ok := s.lookup(sess)
	return ok
}

// lookup returns the person of a live session, extending it.
func (s *sessions) lookup(sess string) (person string, ok bool) {
	if sess == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(sess))
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[h]
	now := s.now()
	if !ok || !now.Before(e.exp) {
		delete(s.sessions, h)
		return "", false
	}
	e.exp = now.Add(SessionTTL)
	s.sessions[h] = e
	return e.person, true
}

// endPerson forgets every session of person (a person removed from a
// gateway).
func (s *sessions) endPerson(person string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, e := range s.sessions {
		if e.person == person {
			delete(s.sessions, h)
		}
	}
}

// end forgets one session (logout).
func (s *sessions) end(sess string) {
	s.mu.Lock()
	delete(s.sessions, sha256.Sum256([]byte(sess)))
	s.mu.Unlock()
}

// clear forgets everything (shutdown).
func (s *sessions) clear() {
	s.mu.Lock()
	clear(s.logins)
	clear(s.sessions)
	s.mu.Unlock()
}

// expireOld drops expired entries, then the soonest-expiring ones until at
// most keep remain; exp is an entry's expiry.
func expireOld[V any](m map[[32]byte]V, now time.Time, keep int, exp func(V) time.Time) {
	for k, v := range m {
		if !now.Before(exp(v)) {
			delete(m, k)
		}
	}
	for len(m) > keep {
		var oldest [32]byte
		var first time.Time
		for k, v := range m {
			if e := exp(v); first.IsZero() || e.Before(first) {
				oldest, first = k, e
			}
		}
		delete(m, oldest)
	}
}
