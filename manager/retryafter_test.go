package manager

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Issue #20 item 1: Retry-After is outside data; every malformed form
// reads as "no wait asked", never as a negative or an overflowed one.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"120", 120 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"007", 7 * time.Second},
		{"4294967295", 4294967295 * time.Second},
		{"4294967296", 0}, // beyond uint32 seconds
		{"99999999999999999999999", 0},
		{"-5", 0},
		{"+5", 0},
		{"1.5", 0},
		{"5s", 0},
		{"0x10", 0},
		{"", 0},
		{"   ", 0},
		{"Wed, 02 Dec 2026 12:02:00 GMT", 2 * time.Minute},
		{"Wednesday, 02-Dec-26 12:00:30 GMT", 30 * time.Second}, // RFC 850
		{"Wed Dec  2 12:00:10 2026", 10 * time.Second},          // asctime
		{"Wed, 02 Dec 2026 11:00:00 GMT", 0},                    // past
		{"Wed, 02 Dec 2026 25:00:00 GMT", 0},
		{"tomorrow", 0},
		{strings.Repeat("9", 65), 0},
		{"Wed, 02 Dec 2026 12:02:00 GMT" + strings.Repeat(" ", 40) + "x", 0},
		{"\x00\xff", 0},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "4294967296", "Wed, 02 Dec 2026 12:02:00 GMT", "Wednesday, 02-Dec-26 12:00:30 GMT",
		"Wed Dec  2 12:00:10 2026", "", " 7 ", "1e3", "Mon, 01 Jan 9999 00:00:00 GMT"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := parseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("parseRetryAfter(%q) = %s: negative", v, d)
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil && len(strings.TrimSpace(v)) <= maxRetryAfterLen {
			if want := time.Duration(n) * time.Second; d != want {
				t.Fatalf("parseRetryAfter(%q) = %s, want %s", v, d, want)
			}
		}
		if len(strings.TrimSpace(v)) > maxRetryAfterLen && d != 0 {
			t.Fatalf("parseRetryAfter of %d bytes = %s; want 0", len(v), d)
		}
	})
}

// Issue #20 item 1: a 503 or 429 whose Retry-After asks for longer than
// the backoff gets it, up to the maximum; a shorter one changes nothing.
func TestBackoffHonoursRetryAfter(t *testing.T) {
	var after atomic.Value
	after.Store("")
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if v := after.Load().(string); v != "" {
			w.Header().Set("Retry-After", v)
		}
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return false
	}})
	e, clock := newClockEnv(t, srvCfg("fx", f.URL(), false))
	ctx := context.Background()
	for _, tc := range []struct {
		header  string
		nominal time.Duration
	}{
		{"", time.Second},
		{"120", 120 * time.Second},
		{"0", time.Second},
		{"100000", 5 * time.Minute}, // capped at BackoffMax
		{clock.Now().Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"soon", time.Second},
	} {
		after.Store(tc.header)
		if err := e.m.Connect(ctx, "fx"); !errors.Is(err, ErrBackoff) {
			t.Fatalf("Retry-After %q: connect: %v", tc.header, err)
		}
		d := retryIn(t, e, clock, "fx")
		if tc.nominal > time.Second {
			if d != tc.nominal {
				t.Errorf("Retry-After %q: next attempt in %s, want %s", tc.header, d, tc.nominal)
			}
			continue
		}
		between(t, "Retry-After "+strconv.Quote(tc.header), d, tc.nominal)
	}
}
