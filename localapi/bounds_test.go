package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// endless is a reader of n bytes of c and nothing else: a peer that
// sends one line without end, without the test holding it in memory.
type endless struct {
	c byte
	n int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	// Filled by doubling copies rather than byte by byte: under -race
	// every byte store is instrumented, and the test streams 65 MiB
	// three times.
	if len(p) > 0 {
		p[0] = e.c
		for i := 1; i < len(p); i *= 2 {
			copy(p[i:], p[:i])
		}
	}
	e.n -= int64(len(p))
	return len(p), nil
}

// writeBig copies r to w in 1 MiB writes rather than io.Copy's 32 KiB:
// the client looks for the line's end in everything it has buffered on
// each read, so the fewer and larger the reads, the cheaper the test.
func writeBig(w io.Writer, r io.Reader) {
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A peer whose call stream or event stream sends one line longer than
// the client's bound gets an error saying so; the client stops reading
// at the bound rather than buffering the line.
func TestStreamsRefuseHugeLines(t *testing.T) {
	const size = maxStreamLine + 1<<20
	c := serveSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/calls":
			w.Header().Set("Content-Type", ContentTypeNDJSON)
			writeBig(w, &endless{c: ' ', n: size}) // whitespace: valid JSON so far, never a value
		case "/api/events":
			w.Header().Set("Content-Type", ContentTypeSSE)
			io.WriteString(w, "event: servers\ndata: ")
			writeBig(w, &endless{c: '1', n: size})
		}
	}))
	// Each stream costs seconds under -race (the client scans the growing
	// line for its end on every read): the context only catches a hang,
	// and the test checks below that each stream ended by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := c.Call(ctx, CallRequest{Tool: "s/t", Approved: true}, CallHandler{})
	e, ok := AsError(err)
	if !ok || e.Code != CodeUnavailable || !strings.Contains(e.Message, "larger than the client accepts") ||
		!strings.Contains(e.Message, fmt.Sprint(maxStreamLine)) {
		t.Fatalf("call over a huge line: %v", err)
	}

	var got []Event
	err = readSSE(&endless{c: '1', n: size}, maxStreamLine, func(ev Event) { got = append(got, ev) })
	if !errors.Is(err, errTooLarge) || len(got) != 0 {
		t.Fatalf("event stream of a huge line: %v, %d events", err, len(got))
	}
	// Through Subscribe, the stream just ends: the channel closes.
	ch, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for ev := range ch {
		t.Fatalf("an event from a huge line: %s (%d bytes)", ev.Type, len(ev.Data))
	}
	if ctx.Err() != nil {
		t.Fatal("the event stream of a huge line did not end by itself: the channel closed only with the context")
	}
}

// Many short data lines add up to one event: the bound is on the event,
// not only on each line.
func TestSSEBoundsTheWholeEvent(t *testing.T) {
	const limit = 1 << 10
	in := "event: servers\n" + strings.Repeat("data: 1\n", limit) + "\n"
	err := readSSE(strings.NewReader(in), limit, func(ev Event) { t.Fatalf("event of %d bytes", len(ev.Data)) })
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "an event is larger") {
		t.Fatalf("err %v", err)
	}
}

// An answer over its bound fails as too large instead of decoding as a
// cut, shorter one.
func TestAnswerBound(t *testing.T) {
	r := &capReader{r: strings.NewReader(`["a","b"]`), n: 5}
	var v []string
	err := json.NewDecoder(r).Decode(&v)
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("decoded %v, err %v", v, err)
	}
	r = &capReader{r: strings.NewReader(`["a","b"]`), n: 64}
	if err := json.NewDecoder(r).Decode(&v); err != nil || len(v) != 2 {
		t.Fatalf("decoded %v, err %v", v, err)
	}
}

// A stream of ever new event types does not grow the queue: beyond
// maxEventTypes undelivered types, new ones are dropped and the known
// ones still keep their newest event.
func TestEventQueueBoundsTypes(t *testing.T) {
	q := newEventQueue()
	q.put(Event{Type: EventServers, Data: json.RawMessage(`1`)})
	for i := range 10 * maxEventTypes {
		q.put(Event{Type: fmt.Sprintf("t%d", i), Data: json.RawMessage(`0`)})
	}
	q.put(Event{Type: EventServers, Data: json.RawMessage(`2`)})
	q.close()
	n := 0
	for {
		ev, ok := q.next()
		if !ok {
			break
		}
		n++
		if ev.Type == EventServers && !bytes.Equal(ev.Data, []byte(`2`)) {
			t.Errorf("servers %s, want the newest", ev.Data)
		}
	}
	if n != maxEventTypes {
		t.Fatalf("%d types queued, want %d", n, maxEventTypes)
	}
}
