package config

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits bound what one server can make this process read, buffer and
// list (issue #10: a server is untrusted). Every field is optional; zero
// means the default of [DefaultLimits]. They are per server, so raising one
// for a server that needs it leaves every other server bounded.
type Limits struct {
	// MaxMessageBytes bounds one JSON-RPC message from the server: a JSON
	// response body or one server-sent event. A tool result between the
	// truncation budget and this cap is read and then truncated with a
	// marker; above it the request fails with a *session.LimitError.
	MaxMessageBytes int64 `json:"maxMessageBytes,omitempty"`
	// MaxStreamBytes and MaxStreamEvents bound everything one request's
	// SSE response stream may carry (progress, questions, the result).
	MaxStreamBytes  int64 `json:"maxStreamBytes,omitempty"`
	MaxStreamEvents int   `json:"maxStreamEvents,omitempty"`
	// MemoryBytes is the server's buffer budget: concurrent responses of
	// one server share it, and a response that does not fit fails.
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// MaxListPages, MaxListItems, MaxListBytes and ListTimeout bound one
	// listing of one category (tools, prompts, resources, templates).
	MaxListPages int      `json:"maxListPages,omitempty"`
	MaxListItems int      `json:"maxListItems,omitempty"`
	MaxListBytes int64    `json:"maxListBytes,omitempty"`
	ListTimeout  Duration `json:"listTimeout,omitempty"`
	// EventsPerSecond and BytesPerSecond throttle the standalone stream
	// (server notifications and requests outside any call), which has no
	// end and so no total: past the rate, reading waits, which slows the
	// server down rather than costing memory.
	EventsPerSecond float64 `json:"eventsPerSecond,omitempty"`
	BytesPerSecond  int64   `json:"bytesPerSecond,omitempty"`
}

// DefaultLimits are the limits of a server that sets none. They are far
// above what any well-behaved server sends, and keep a hostile server's
// cost to tens of megabytes.
var DefaultLimits = Limits{
	MaxMessageBytes: 8 << 20,
	MaxStreamBytes:  64 << 20,
	MaxStreamEvents: 100_000,
	MemoryBytes:     32 << 20,
	MaxListPages:    100,
	MaxListItems:    10_000,
	MaxListBytes:    16 << 20,
	ListTimeout:     Duration(60 * time.Second),
	EventsPerSecond: 1000,
	BytesPerSecond:  4 << 20,
}

// maxLimits are the largest values a config may ask for: a limit exists
// to protect the process, so it cannot be switched off.
var maxLimits = Limits{
	MaxMessageBytes: 256 << 20,
	MaxStreamBytes:  4 << 30,
	MaxStreamEvents: 100_000_000,
	MemoryBytes:     4 << 30,
	MaxListPages:    100_000,
	MaxListItems:    1_000_000,
	MaxListBytes:    1 << 30,
	ListTimeout:     Duration(time.Hour),
	EventsPerSecond: 1_000_000,
	BytesPerSecond:  1 << 30,
}

// limitKind says how a limit is written and read.
type limitKind int

const (
	kindBytes    limitKind = iota // int64 bytes: "16MiB"
	kindCount                     // int: "10000"
	kindDuration                  // Duration: "90s"
	kindRate                      // float64: "2.5"
)

// limitField is one field of Limits, as the table below drives defaults,
// validation, Set and String: each limit is described once.
type limitField struct {
	name string
	kind limitKind
	get  func(Limits) float64
	set  func(*Limits, float64)
}

// limitTable lists the fields of Limits in declaration order.
var limitTable = []limitField{
	{"maxMessageBytes", kindBytes, func(l Limits) float64 { return float64(l.MaxMessageBytes) }, func(l *Limits, v float64) { l.MaxMessageBytes = int64(v) }},
	{"maxStreamBytes", kindBytes, func(l Limits) float64 { return float64(l.MaxStreamBytes) }, func(l *Limits, v float64) { l.MaxStreamBytes = int64(v) }},
	{"maxStreamEvents", kindCount, func(l Limits) float64 { return float64(l.MaxStreamEvents) }, func(l *Limits, v float64) { l.MaxStreamEvents = int(v) }},
	{"memoryBytes", kindBytes, func(l Limits) float64 { return float64(l.MemoryBytes) }, func(l *Limits, v float64) { l.MemoryBytes = int64(v) }},
	{"maxListPages", kindCount, func(l Limits) float64 { return float64(l.MaxListPages) }, func(l *Limits, v float64) { l.MaxListPages = int(v) }},
	{"maxListItems", kindCount, func(l Limits) float64 { return float64(l.MaxListItems) }, func(l *Limits, v float64) { l.MaxListItems = int(v) }},
	{"maxListBytes", kindBytes, func(l Limits) float64 { return float64(l.MaxListBytes) }, func(l *Limits, v float64) { l.MaxListBytes = int64(v) }},
	{"listTimeout", kindDuration, func(l Limits) float64 { return float64(l.ListTimeout) }, func(l *Limits, v float64) { l.ListTimeout = Duration(v) }},
	{"eventsPerSecond", kindRate, func(l Limits) float64 { return l.EventsPerSecond }, func(l *Limits, v float64) { l.EventsPerSecond = v }},
	{"bytesPerSecond", kindBytes, func(l Limits) float64 { return float64(l.BytesPerSecond) }, func(l *Limits, v float64) { l.BytesPerSecond = int64(v) }},
}

// show writes a value of the field for a message ("8 MiB", "1h0m0s").
func (f limitField) show(v float64) string {
	switch f.kind {
	case kindDuration:
		return time.Duration(v).String()
	case kindBytes:
		return FormatBytes(int64(v))
	case kindRate:
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%d", int64(v))
}

// exact writes a value of the field so that Set reads it back unchanged.
func (f limitField) exact(v float64) string {
	switch f.kind {
	case kindDuration:
		return time.Duration(v).String()
	case kindBytes:
		return exactBytes(int64(v))
	case kindRate:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatInt(int64(v), 10)
}

// parse reads a value of the field as Set takes it.
func (f limitField) parse(value string) (float64, string) {
	switch f.kind {
	case kindBytes:
		n, err := ParseBytes(value)
		if err != nil {
			return 0, err.Error()
		}
		return float64(n), ""
	case kindCount:
		n, err := strconv.Atoi(strings.ReplaceAll(value, "_", ""))
		if err != nil {
			return 0, fmt.Sprintf("%q is not a whole number", value)
		}
		return float64(n), ""
	case kindDuration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return 0, fmt.Sprintf("%q is not a duration such as \"90s\"", value)
		}
		return float64(d), ""
	}
	v, err := strconv.ParseFloat(value, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Sprintf("%q is not a number", value)
	}
	return v, ""
}

// WithDefaults returns l with every unset field set to its default.
func (l Limits) WithDefaults() Limits {
	for _, f := range limitTable {
		if f.get(l) == 0 {
			f.set(&l, f.get(DefaultLimits))
		}
	}
	return l
}

// validate checks each set limit is positive and at most its maximum.
func (l Limits) validate(fail func(field, problem string) error) error {
	for _, f := range limitTable {
		switch v, max := f.get(l), f.get(maxLimits); {
		case v < 0:
			return fail("limits."+f.name, fmt.Sprintf("is negative (%s); leave it out for the default of %s", f.show(v), f.show(f.get(DefaultLimits))))
		case v > max:
			return fail("limits."+f.name, fmt.Sprintf("is %s; the largest allowed is %s", f.show(v), f.show(max)))
		}
	}
	return nil
}

// FormatBytes shows a byte count the way limits are written in messages:
// "8 MiB", "64 KiB", "300 B".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// checkDuration reports what is wrong with a raw JSON duration value, or
// "" when it decodes; used before decoding so the error names the field
// (Duration's own decoder cannot know which field it is in).
func checkDuration(raw json.RawMessage) string {
	var d Duration
	if err := d.UnmarshalJSON(raw); err != nil {
		if fe, ok := err.(*FieldError); ok {
			return fe.Problem
		}
		return err.Error()
	}
	return ""
}

// LimitNames lists the limits' field names, as written in a server's
// config and accepted by [Limits.Set].
func LimitNames() []string { return slices.Clone(limitFields) }

// Set sets one limit by its field name from text: sizes in bytes with an
// optional unit ("16MiB", "512KiB", "2GB", "1048576"), counts as integers,
// listTimeout as a duration ("90s"), eventsPerSecond as a number. "default"
// or "" returns the limit to its default. The value is checked like a
// config's.
func (l *Limits) Set(name, value string) error {
	i := slices.IndexFunc(limitTable, func(f limitField) bool { return f.name == name })
	if i < 0 {
		return &FieldError{Field: "limits." + name, Problem: "unknown limit" + suggest(name, limitFields) + "; the limits are " + strings.Join(limitFields, ", ")}
	}
	f := limitTable[i]
	var v float64
	if value = strings.TrimSpace(value); value != "" && !strings.EqualFold(value, "default") {
		var problem string
		if v, problem = f.parse(value); problem != "" {
			return &FieldError{Field: "limits." + name, Problem: problem}
		}
	}
	next := *l
	f.set(&next, v)
	if err := next.validate(func(field, problem string) error { return &FieldError{Field: field, Problem: problem} }); err != nil {
		return err
	}
	*l = next
	return nil
}

// ParseBytes reads a size: a whole number of bytes with an optional unit,
// B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%q is not a size such as 16MiB", s)
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '_' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	mult := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}
	m, ok := mult[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q; use B, KiB, MiB, GiB, KB, MB or GB", s, unit)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(num, "_", ""), 10, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size such as 16MiB", s)
	}
	if n > math.MaxInt64/m {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * m, nil
}

// String lists the limits that are set, as "name=value" in field order
// ("maxMessageBytes=16MiB, listTimeout=2m0s"), each readable by [Limits.Set]; "" when all are defaults.
func (l Limits) String() string {
	var parts []string
	for _, f := range limitTable {
		if v := f.get(l); v != 0 {
			parts = append(parts, f.name+"="+f.exact(v))
		}
	}
	return strings.Join(parts, ", ")
}

// exactBytes shows a size so that ParseBytes reads it back unchanged.
func exactBytes(n int64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n != 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n != 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
