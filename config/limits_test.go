package config

import (
	"strings"
	"testing"
	"time"
)

// Issue #10: every limit has a config field; bad values are refused with a
// message naming the field and what to write instead.
func TestParseLimits(t *testing.T) {
	base := `{"id":"s","url":"https://mcp.example.com/mcp","auth":{"kind":"none"},"limits":%s}`
	cases := []struct {
		limits  string
		wantErr string
		check   func(t *testing.T, l Limits)
	}{
		{`{"maxMessageBytes":16777216,"listTimeout":"90s","eventsPerSecond":50}`, "", func(t *testing.T, l Limits) {
			if l.MaxMessageBytes != 16<<20 || time.Duration(l.ListTimeout) != 90*time.Second || l.EventsPerSecond != 50 {
				t.Errorf("parsed %+v", l)
			}
			d := l.WithDefaults()
			if d.MaxMessageBytes != 16<<20 || d.MaxStreamBytes != DefaultLimits.MaxStreamBytes {
				t.Errorf("defaults not filled in: %+v", d)
			}
		}},
		{`{}`, "", func(t *testing.T, l Limits) {
			if l != (Limits{}) || l.WithDefaults() != DefaultLimits {
				t.Errorf("empty limits: %+v", l)
			}
		}},
		{`{"maxMesageBytes":1}`, `limits.maxMesageBytes: unknown field`, nil},
		{`{"maxMessageBytes":-1}`, `limits.maxMessageBytes: is negative`, nil},
		{`{"maxMessageBytes":1073741824}`, `largest allowed is 256 MiB`, nil},
		{`{"listTimeout":"soon"}`, `limits.listTimeout: not a duration`, nil},
		{`{"listTimeout":"2h"}`, `limits.listTimeout: is 2h0m0s; the largest allowed is 1h0m0s`, nil},
		{`{"maxListPages":"many"}`, `limits.maxListPages`, nil},
		{`[]`, `limits`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.limits, func(t *testing.T) {
			s, err := ParseServer([]byte(strings.Replace(base, "%s", tc.limits, 1)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s.Limits)
		})
	}
}

// A change of limits makes a new connection: they are fixed per session.
func TestLimitsChangeConnection(t *testing.T) {
	a := Server{ID: "s", URL: "https://x/mcp", Auth: Auth{Kind: AuthNone}}
	b := a
	b.Limits.MaxMessageBytes = 1 << 20
	if ConnectionEqual(a, b) {
		t.Fatal("a limits change kept the connection")
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{300: "300 B", 64 << 10: "64 KiB", 8 << 20: "8 MiB", 3 << 30: "3 GiB", 1<<20 + 1<<19: "1.5 MiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q; want %q", n, got, want)
		}
	}
}

func TestLimitsSet(t *testing.T) {
	cases := []struct {
		name, value string
		wantErr     string
		check       func(Limits) bool
	}{
		{"maxMessageBytes", "16MiB", "", func(l Limits) bool { return l.MaxMessageBytes == 16<<20 }},
		{"maxMessageBytes", "2MB", "", func(l Limits) bool { return l.MaxMessageBytes == 2_000_000 }},
		{"maxMessageBytes", "1048576", "", func(l Limits) bool { return l.MaxMessageBytes == 1<<20 }},
		{"maxMessageBytes", "default", "", func(l Limits) bool { return l.MaxMessageBytes == 0 }},
		{"maxListItems", "20_000", "", func(l Limits) bool { return l.MaxListItems == 20000 }},
		{"listTimeout", "2m", "", func(l Limits) bool { return time.Duration(l.ListTimeout) == 2*time.Minute }},
		{"eventsPerSecond", "2.5", "", func(l Limits) bool { return l.EventsPerSecond == 2.5 }},
		{"maxMessageBytes", "16 furlongs", "unknown unit", nil},
		{"maxMessageBytes", "1TiB", "unknown unit", nil},
		{"maxMessageBytes", "1GiB", "largest allowed is 256 MiB", nil},
		{"maxMessageBytes", "-5", "not a size", nil},
		{"maxListPages", "lots", "not a whole number", nil},
		{"listTimeout", "soon", "not a duration", nil},
		{"eventsPerSecond", "NaN", "not a number", nil},
		{"maxMesageBytes", "1", `did you mean "maxMessageBytes"`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			l := Limits{MaxMessageBytes: 4 << 20}
			err := l.Set(tc.name, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want %q", err, tc.wantErr)
				}
				if l.MaxMessageBytes != 4<<20 {
					t.Fatal("a refused value changed the limits")
				}
				return
			}
			if err != nil || !tc.check(l) {
				t.Fatalf("err = %v, limits %+v", err, l)
			}
		})
	}
}

// SPEC §9 A2: custom headers, a protocol pin and a log level are checked;
// names the transport owns are refused, Authorization for every auth kind.
func TestValidateHeadersProtocolLogLevel(t *testing.T) {
	ok := Server{ID: "s", URL: "https://mcp.example.com/mcp", Auth: Auth{Kind: AuthNone},
		Headers: map[string]string{"X-Api-Key": "k"}, ProtocolVersion: "2025-03-26", LogLevel: "info"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mut  func(*Server)
		want string
	}{
		{func(s *Server) { s.Headers = map[string]string{"Authorization": "Bearer x"} }, "remotemcp sends Authorization itself"},
		{func(s *Server) { s.Headers = map[string]string{"mcp-session-id": "x"} }, "the MCP transport owns this header"},
		{func(s *Server) { s.Headers = map[string]string{"Host": "x"} }, "the MCP transport owns this header"},
		{func(s *Server) { s.Headers = map[string]string{"X Key": "x"} }, "not a valid header name"},
		{func(s *Server) { s.Headers = map[string]string{"X-Key": "a\r\nInjected: 1"} }, "control character"},
		{func(s *Server) { s.Headers = map[string]string{"X-Key": "a", "x-key": "b"} }, "names ignore case"},
		{func(s *Server) { s.ProtocolVersion = "2024-11-05" }, "protocolVersion"},
		{func(s *Server) { s.LogLevel = "loud" }, "logLevel"},
	}
	for _, tc := range cases {
		s := ok.Clone()
		tc.mut(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v; want %q", s.Headers, err, tc.want)
		}
	}
	b := ok.Clone()
	b.Headers["X-Api-Key"] = "other"
	if ConnectionEqual(ok, b) {
		t.Error("a header change kept the connection")
	}
}

// Every field of Limits is in the table that drives defaults, validation,
// Set and String, in declaration order.
func TestLimitTableCoversEveryField(t *testing.T) {
	var names []string
	for _, f := range limitTable {
		names = append(names, f.name)
	}
	if strings.Join(names, ",") != strings.Join(limitFields, ",") {
		t.Fatalf("limitTable %v; Limits' fields %v", names, limitFields)
	}
	for _, f := range limitTable {
		if f.get(DefaultLimits) == 0 || f.get(maxLimits) < f.get(DefaultLimits) {
			t.Errorf("%s: default %v, max %v", f.name, f.get(DefaultLimits), f.get(maxLimits))
		}
		var l Limits
		f.set(&l, f.get(DefaultLimits))
		if f.get(l) != f.get(DefaultLimits) {
			t.Errorf("%s: set/get do not round-trip", f.name)
		}
	}
}
