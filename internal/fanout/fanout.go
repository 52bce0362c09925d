// Package fanout delivers events to subscribers without ever blocking the
// publisher. The events it carries are snapshots or state changes whose
// latest value matters most, so a subscriber that falls behind loses its
// oldest unread event, never the newest one.
package fanout

import (
	"context"
	"sync"
)

// Broker fans values of type T out to subscribers. The zero value is not
// ready; use New.
type Broker[T any] struct {
	buffer int

	mu     sync.Mutex
	subs   map[chan T]struct{}
	closed bool
}

// New returns a Broker whose subscribers each buffer up to buffer values
// (at least 1).
func New[T any](buffer int) *Broker[T] {
	return &Broker[T]{buffer: max(buffer, 1), subs: map[chan T]struct{}{}}
}

// Publish hands v to every subscriber, dropping a subscriber's oldest
// unread value when its buffer is full.
func (b *Broker[T]) Publish(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		for {
			select {
			case ch <- v:
			default:
				select { // full: drop the oldest and try again
				case <-ch:
				default:
				}
				continue
			}
			break
		}
	}
}

// Subscribe delivers values until ctx is done or the broker closes; the
// channel is closed then.
func (b *Broker[T]) Subscribe(ctx context.Context) <-chan T {
	ch := make(chan T, b.buffer)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch
	}
	b.subs[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	})
	return ch
}

// Close closes every subscriber's channel; later subscriptions get a closed
// channel. Idempotent.
func (b *Broker[T]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}

// Drain discards every value already waiting in ch, without blocking, so
// that a subscriber acting on "something changed" acts once per burst. It
// reports false when ch is closed.
func Drain[T any](ch <-chan T) bool {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return false
			}
		default:
			return true
		}
	}
}
