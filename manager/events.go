package manager

import (
	"context"
	"sync"
)

// Event is a server's new status, published on every state or catalog
// change.
type Event struct {
	ServerID string
	Status   ServerStatus
	// Removed is set when the server was deleted.
	Removed bool
}

// broker fans events out to subscribers. Events are snapshots, so a slow
// subscriber loses intermediate ones but always gets the latest: the
// publisher never blocks on a subscriber.
type broker struct {
	mu     sync.Mutex
	subs   map[chan Event]struct{}
	closed bool
}

func (b *broker) init() { b.subs = map[chan Event]struct{}{} }

func (b *broker) publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		for {
			select {
			case ch <- ev:
			default:
				select { // drop the oldest and try again
				case <-ch:
				default:
				}
				continue
			}
			break
		}
	}
}

func (b *broker) subscribe(ctx context.Context) <-chan Event {
	ch := make(chan Event, 64)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch
	}
	b.subs[ch] = struct{}{}
	context.AfterFunc(ctx, func() { b.unsubscribe(ch) })
	return ch
}

func (b *broker) unsubscribe(ch chan Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}

// Subscribe delivers status events until ctx is done or the manager
// closes; the channel is closed then.
func (m *Manager) Subscribe(ctx context.Context) <-chan Event { return m.events.subscribe(ctx) }
