package localapi

import (
	"bufio"
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
// fewer writes and reads, so less instrumented work under -race (the
// client looks at each byte once whatever the pieces; see
// TestLineScanLooksAtEachByteOnce).
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
	// Each stream moves 65 MiB, slow under -race on a loaded machine:
	// the context only catches a hang, and the test checks below that
	// each stream ended by itself.
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

// pieces hands out r's bytes at most n at a time: a peer whose line
// arrives in many small reads.
type pieces struct {
	r io.Reader
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(b) > p.n {
		b = b[:p.n]
	}
	return p.r.Read(b)
}

// The stream reader looks at each byte once for a line's end, however
// many reads a line takes: a line near the bound arriving in small
// pieces used to be searched again from its start after every read,
// O(n²) (seconds of CPU for a 64 MiB line). Counted, not timed: with
// bufio.ScanLines, the 1 MiB line below in 4 KiB reads had 128 MiB
// examined; now at most the line is.
func TestLineScanLooksAtEachByteOnce(t *testing.T) {
	const limit = 1 << 20
	// A line over the bound, in 4 KiB reads: refused as too large, each
	// byte examined once.
	cs := newCallStream(&pieces{r: &endless{c: ' ', n: limit + 1<<10}, n: 4 << 10}, limit)
	if _, err := cs.next(); !errors.Is(err, errTooLarge) {
		t.Fatalf("huge line: %v", err)
	}
	if cs.lines.examined > limit {
		t.Fatalf("%d bytes examined for a line refused at %d", cs.lines.examined, limit)
	}
	// A line under the bound, in 1 KiB reads, then a short one: both
	// read, each byte examined once.
	big := `{"type":"progress","progress":{"message":"` + strings.Repeat("x", limit-100) + `"}}`
	in := big + "\n" + `{"type":"result","result":{}}` + "\r\n"
	cs = newCallStream(&pieces{r: strings.NewReader(in), n: 1 << 10}, limit)
	ev, err := cs.next()
	if err != nil || ev.Type != CallEventProgress || ev.Progress == nil || len(ev.Progress.Message) != limit-100 {
		t.Fatalf("long line: %s, %v", ev.Type, err)
	}
	if ev, err := cs.next(); err != nil || ev.Type != CallEventResult {
		t.Fatalf("line after a long one: %s, %v", ev.Type, err)
	}
	if _, err := cs.next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("end: %v", err)
	}
	if cs.lines.examined > int64(len(in)) {
		t.Fatalf("%d bytes examined for %d bytes of lines", cs.lines.examined, len(in))
	}
}

// lineSplit gives the lines bufio.ScanLines gives, whatever the pieces
// the input arrives in: \r\n and \n ends, blank lines, a last line
// without an end.
func TestLineSplitIsScanLines(t *testing.T) {
	for _, in := range []string{
		"", "\n", "\n\n", "a", "a\n", "a\r\n", "a\r", "\r\n\r\n", "a\nb", "a\n\nb\r\n\r\nc\r",
		"event: x\ndata: 1\n\n" + strings.Repeat("y", 5000) + "\nz",
	} {
		want := scanAll(t, bufio.NewScanner(strings.NewReader(in)))
		for _, n := range []int{1, 2, 3, 7, 4096, 1 << 20} {
			sc, ls := newLineScanner(&pieces{r: strings.NewReader(in), n: n}, 1<<20)
			got := scanAll(t, sc)
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
				t.Errorf("%.40q in %d-byte reads: %.80q, want %.80q", in, n, got, want)
			}
			if ls.examined > int64(len(in)) {
				t.Errorf("%.40q in %d-byte reads: %d bytes examined of %d", in, n, ls.examined, len(in))
			}
		}
	}
}

func scanAll(t *testing.T, sc *bufio.Scanner) []string {
	t.Helper()
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
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
		q.put(Event{Type: EventType(fmt.Sprintf("t%d", i)), Data: json.RawMessage(`0`)})
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
