package store

import (
	"bytes"
	"sync"
	"time"
)

// Memory is the session store for what must never touch disk: OAuth access
// tokens (R3.11, the chrome.storage.session of SPEC §7). Keys carry the
// purpose and binding, so an access token is only found under the binding
// it was issued for (R3.10). Safe for concurrent use; the zero value is not
// usable, call NewMemory.
type Memory struct {
	mu sync.Mutex
	m  map[SecretKey]memEntry
}

type memEntry struct {
	v       []byte
	expires time.Time // zero: never
}

// NewMemory returns an empty session store.
func NewMemory() *Memory {
	return &Memory{m: make(map[SecretKey]memEntry)}
}

// Put stores a copy of v under k until expires; a zero expires never
// expires. Expired entries of other keys are dropped on the way, so the
// map does not grow with tokens nobody asks for again.
func (m *Memory) Put(k SecretKey, v []byte, expires time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for key, e := range m.m {
		if e.expired(now) {
			delete(m.m, key)
		}
	}
	m.m[k] = memEntry{v: bytes.Clone(v), expires: expires}
}

// Get returns a copy of the value under k, or false if there is none or it
// has expired.
func (m *Memory) Get(k SecretKey) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[k]
	if !ok {
		return nil, false
	}
	if e.expired(time.Now()) {
		delete(m.m, k)
		return nil, false
	}
	return bytes.Clone(e.v), true
}

// Delete forgets the value under k.
func (m *Memory) Delete(k SecretKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, k)
}

// DeleteServer forgets every value of one server (all purposes and
// bindings), e.g. when it is deleted or its URL or binding changes.
func (m *Memory) DeleteServer(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.m {
		if k.ServerID == id {
			delete(m.m, k)
		}
	}
}

func (e memEntry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}
