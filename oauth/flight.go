package oauth

import (
	"context"
	"sync"
	"sync/atomic"
)

// flightGroup makes concurrent callers with the same key share one run of
// a function (in-process single flight, like x/sync/singleflight), with
// one difference that matters here: the run does not use the context of
// the caller that happened to start it. It runs on a context that keeps
// that caller's values (host permission purpose and the like) but none of
// its cancellation, and that is cancelled only when every caller waiting
// for the run has given up. So a first caller that gives up does not fail
// the others, and an interactive flow nobody waits for any more (a
// loopback browser waiting for its callback) still ends.
//
// A caller that gives up returns its own ctx.Err() at once, with the step
// the run was at (markStep), so that its timeout is attributed to that
// step as if it had run the step itself. Work that must finish even when
// everyone has given up (spending and saving a refresh token) detaches
// itself further (see refresh).
type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done    chan struct{}
	val     any
	err     error
	waiters int // callers still waiting; guarded by flightGroup.mu
	cancel  context.CancelFunc
	step    atomic.Value // Step: how far the run has got
}

type stepKey struct{}

// markStep records that the flight running on ctx (if any) has reached
// step.
func markStep(ctx context.Context, step Step) {
	if f, ok := ctx.Value(stepKey{}).(*flight); ok {
		f.step.Store(step)
	}
}

// do runs fn once for all concurrent callers of key and returns its
// result, or — when ctx ends first — ctx.Err() and the step the run had
// reached (markStep; "" if none).
func (g *flightGroup) do(ctx context.Context, key string, fn func(ctx context.Context) (any, error)) (v any, at Step, err error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*flight)
	}
	f, ok := g.m[key]
	if !ok {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		fctx = context.WithValue(fctx, stepKey{}, f)
		g.m[key] = f
		go func() {
			defer cancel()
			v, err := fn(fctx)
			g.mu.Lock()
			f.val, f.err = v, err
			if g.m[key] == f {
				delete(g.m, key)
			}
			g.mu.Unlock()
			close(f.done)
		}()
	}
	f.waiters++
	g.mu.Unlock()

	select {
	case <-f.done:
		return f.val, "", f.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	f.waiters--
	if f.waiters == 0 {
		select {
		case <-f.done:
		default:
			// Nobody waits any more: abandon the run, and let the next
			// caller start a fresh one rather than join a cancelled one.
			f.cancel()
			if g.m[key] == f {
				delete(g.m, key)
			}
		}
	}
	g.mu.Unlock()
	at, _ = f.step.Load().(Step)
	return nil, at, ctx.Err()
}
