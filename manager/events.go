package manager

import (
	"context"
)

// Event is a server's new status, published on every state or catalog
// change.
type Event struct {
	ServerID string
	Status   ServerStatus
	// Removed is set when the server was deleted.
	Removed bool
}

// Subscribe delivers status events until ctx is done or the manager
// closes; the channel is closed then.
func (m *Manager) Subscribe(ctx context.Context) <-chan Event { return m.events.Subscribe(ctx) }
