package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/localapi"
)

// Questions presents the server questions of one tool call: asked at the
// terminal, each in a goroutine that Wait waits for, or, without a
// terminal, printed with the command that answers them.
type Questions struct {
	T *Terminal
	E Answerer
	// Self is how another shell reaches this data directory ("remotemcp
	// --data-dir DIR"), for the printed command.
	Self string

	wg sync.WaitGroup
}

// Present asks question c at the terminal until ctx ends, or prints the
// command that answers it.
func (q *Questions) Present(ctx context.Context, c localapi.Card) {
	if q.T.Interactive() {
		q.wg.Go(func() { q.T.Question(ctx, q.E, c) })
		return
	}
	w := q.T.Err
	fmt.Fprintf(w, "server %s asks (its own words): %s\n", clitext.Cell(c.ServerID), clitext.Cell(c.Message))
	example := "{}"
	if c.Form != nil {
		for _, f := range c.Form.Fields {
			fmt.Fprintf(w, "  %s\n", FieldLabel(f))
		}
		example = ExampleAnswer(c.Form)
	}
	fmt.Fprintf(w, "waiting for an answer: %s elicitations answer %s accept '%s'\n", q.Self, c.ID, example)
	fmt.Fprintf(w, "  (or: ... answer %s decline | cancel; the call waits until its timeout)\n", c.ID)
}

// Grace bounds the wait for a question still on the terminal after its
// call ended: the person may be typing an answer nobody needs any more.
const Grace = 200 * time.Millisecond

// Wait waits for the questions being asked, at most Grace: one still
// waiting for a line then is left to the end of the process.
func (q *Questions) Wait() {
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(Grace):
	}
}

// Subscriber is the local API's event feed (localapi.Engine.Subscribe).
type Subscriber interface {
	Subscribe(ctx context.Context) (<-chan localapi.Event, error)
}

// Watch presents each new pending question that match accepts, as the
// engine's events announce it (a re-sent call has no stream of its own to
// bring them), until stop is called. stop waits for the watcher, at most
// Grace, then for the questions being asked (Wait).
func (q *Questions) Watch(ctx context.Context, s Subscriber, match func(localapi.Card) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	events, err := s.Subscribe(ctx)
	if err != nil {
		close(done)
	} else {
		go func() {
			defer close(done)
			seen := map[string]bool{}
			for ev := range events {
				var cards []localapi.Card
				if ev.Type != localapi.EventCards || json.Unmarshal(ev.Data, &cards) != nil {
					continue
				}
				for _, c := range cards {
					if c.Status == localapi.CardPending && !seen[c.ID] && match(c) && ctx.Err() == nil {
						seen[c.ID] = true
						q.Present(ctx, c)
					}
				}
			}
		}()
	}
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(Grace):
		}
		q.Wait()
	}
}
