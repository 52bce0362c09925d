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
type sessions struct {
	mu       sync.Mutex
	logins   map[[32]byte]time.Time // login token hash → expiry
	sessions map[[32]byte]time.Time // session hash → expiry (sliding)
	now      func() time.Time
}

func newSessions() *sessions {
	return &sessions{logins: map[[32]byte]time.Time{}, sessions: map[[32]byte]time.Time{}, now: time.Now}
}

// newLoginToken makes a login token valid once for LoginTokenTTL.
func (s *sessions) newLoginToken() (string, time.Time) {
	tok := randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	expireOld(s.logins, now, maxLoginTokens-1)
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
	sess := randomToken()
	expireOld(s.sessions, now, maxSessions-1)
	s.sessions[sha256.Sum256([]byte(sess))] = now.Add(SessionTTL)
	return sess, true
}

// valid reports whether a session token is live, extending it.
func (s *sessions) valid(sess string) bool {
	if sess == "" {
		return false
	}
	h := sha256.Sum256([]byte(sess))
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.sessions[h]
	now := s.now()
	if !ok || !now.Before(exp) {
		delete(s.sessions, h)
		return false
	}
	s.sessions[h] = now.Add(SessionTTL)
	return true
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
// most keep remain.
func expireOld(m map[[32]byte]time.Time, now time.Time, keep int) {
	for k, exp := range m {
		if !now.Before(exp) {
			delete(m, k)
		}
	}
	for len(m) > keep {
		var oldest [32]byte
		var first time.Time
		for k, exp := range m {
			if first.IsZero() || exp.Before(first) {
				oldest, first = k, exp
			}
		}
		delete(m, oldest)
	}
}
