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

// WithDefaults returns l with every unset field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	set := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	set(&l.MaxMessageBytes, d.MaxMessageBytes)
	set(&l.MaxStreamBytes, d.MaxStreamBytes)
	set(&l.MemoryBytes, d.MemoryBytes)
	set(&l.MaxListBytes, d.MaxListBytes)
	set(&l.BytesPerSecond, d.BytesPerSecond)
	if l.MaxStreamEvents == 0 {
		l.MaxStreamEvents = d.MaxStreamEvents
	}
	if l.MaxListPages == 0 {
		l.MaxListPages = d.MaxListPages
	}
	if l.MaxListItems == 0 {
		l.MaxListItems = d.MaxListItems
	}
	if l.ListTimeout == 0 {
		l.ListTimeout = d.ListTimeout
	}
	if l.EventsPerSecond == 0 {
		l.EventsPerSecond = d.EventsPerSecond
	}
	return l
}

// validate checks each set limit is positive and at most its maximum.
func (l Limits) validate(fail func(field, problem string) error) error {
	type num struct {
		name     string
		v, max   float64
		isBytes  bool
		dur      bool
		fraction bool
	}
	m := maxLimits
	for _, n := range []num{
		{"maxMessageBytes", float64(l.MaxMessageBytes), float64(m.MaxMessageBytes), true, false, false},
		{"maxStreamBytes", float64(l.MaxStreamBytes), float64(m.MaxStreamBytes), true, false, false},
		{"maxStreamEvents", float64(l.MaxStreamEvents), float64(m.MaxStreamEvents), false, false, false},
		{"memoryBytes", float64(l.MemoryBytes), float64(m.MemoryBytes), true, false, false},
		{"maxListPages", float64(l.MaxListPages), float64(m.MaxListPages), false, false, false},
		{"maxListItems", float64(l.MaxListItems), float64(m.MaxListItems), false, false, false},
		{"maxListBytes", float64(l.MaxListBytes), float64(m.MaxListBytes), true, false, false},
		{"listTimeout", float64(l.ListTimeout), float64(m.ListTimeout), false, true, false},
		{"eventsPerSecond", l.EventsPerSecond, m.EventsPerSecond, false, false, true},
		{"bytesPerSecond", float64(l.BytesPerSecond), float64(m.BytesPerSecond), true, false, false},
	} {
		show := func(v float64) string {
			switch {
			case n.dur:
				return time.Duration(v).String()
			case n.isBytes:
				return FormatBytes(int64(v))
			case n.fraction:
				return fmt.Sprint(v)
			}
			return fmt.Sprintf("%d", int64(v))
		}
		switch {
		case n.v < 0:
			return fail("limits."+n.name, fmt.Sprintf("is negative (%s); leave it out for the default of %s", show(n.v), show(defaultOf(n.name))))
		case n.v > n.max:
			return fail("limits."+n.name, fmt.Sprintf("is %s; the largest allowed is %s", show(n.v), show(n.max)))
		}
	}
	return nil
}

func defaultOf(name string) float64 {
	d := DefaultLimits
	switch name {
	case "maxMessageBytes":
		return float64(d.MaxMessageBytes)
	case "maxStreamBytes":
		return float64(d.MaxStreamBytes)
	case "maxStreamEvents":
		return float64(d.MaxStreamEvents)
	case "memoryBytes":
		return float64(d.MemoryBytes)
	case "maxListPages":
		return float64(d.MaxListPages)
	case "maxListItems":
		return float64(d.MaxListItems)
	case "maxListBytes":
		return float64(d.MaxListBytes)
	case "listTimeout":
		return float64(d.ListTimeout)
	case "eventsPerSecond":
		return d.EventsPerSecond
	case "bytesPerSecond":
		return float64(d.BytesPerSecond)
	}
	return 0
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
	value = strings.TrimSpace(value)
	reset := value == "" || strings.EqualFold(value, "default")
	fail := func(problem string) error { return &FieldError{Field: "limits." + name, Problem: problem} }
	next := *l
	switch name {
	case "maxMessageBytes", "maxStreamBytes", "memoryBytes", "maxListBytes", "bytesPerSecond":
		var n int64
		if !reset {
			var err error
			if n, err = ParseBytes(value); err != nil {
				return fail(err.Error())
			}
		}
		switch name {
		case "maxMessageBytes":
			next.MaxMessageBytes = n
		case "maxStreamBytes":
			next.MaxStreamBytes = n
		case "memoryBytes":
			next.MemoryBytes = n
		case "maxListBytes":
			next.MaxListBytes = n
		case "bytesPerSecond":
			next.BytesPerSecond = n
		}
	case "maxStreamEvents", "maxListPages", "maxListItems":
		var n int
		if !reset {
			v, err := strconv.Atoi(strings.ReplaceAll(value, "_", ""))
			if err != nil {
				return fail(fmt.Sprintf("%q is not a whole number", value))
			}
			n = v
		}
		switch name {
		case "maxStreamEvents":
			next.MaxStreamEvents = n
		case "maxListPages":
			next.MaxListPages = n
		case "maxListItems":
			next.MaxListItems = n
		}
	case "listTimeout":
		var d time.Duration
		if !reset {
			v, err := time.ParseDuration(value)
			if err != nil {
				return fail(fmt.Sprintf("%q is not a duration such as \"90s\"", value))
			}
			d = v
		}
		next.ListTimeout = Duration(d)
	case "eventsPerSecond":
		var f float64
		if !reset {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fail(fmt.Sprintf("%q is not a number", value))
			}
			f = v
		}
		next.EventsPerSecond = f
	default:
		return &FieldError{Field: "limits." + name, Problem: "unknown limit" + suggest(name, limitFields) + "; the limits are " + strings.Join(limitFields, ", ")}
	}
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
	add := func(name string, set bool, v string) {
		if set {
			parts = append(parts, name+"="+v)
		}
	}
	add("maxMessageBytes", l.MaxMessageBytes != 0, exactBytes(l.MaxMessageBytes))
	add("maxStreamBytes", l.MaxStreamBytes != 0, exactBytes(l.MaxStreamBytes))
	add("maxStreamEvents", l.MaxStreamEvents != 0, strconv.Itoa(l.MaxStreamEvents))
	add("memoryBytes", l.MemoryBytes != 0, exactBytes(l.MemoryBytes))
	add("maxListPages", l.MaxListPages != 0, strconv.Itoa(l.MaxListPages))
	add("maxListItems", l.MaxListItems != 0, strconv.Itoa(l.MaxListItems))
	add("maxListBytes", l.MaxListBytes != 0, exactBytes(l.MaxListBytes))
	add("listTimeout", l.ListTimeout != 0, time.Duration(l.ListTimeout).String())
	add("eventsPerSecond", l.EventsPerSecond != 0, strconv.FormatFloat(l.EventsPerSecond, 'g', -1, 64))
	add("bytesPerSecond", l.BytesPerSecond != 0, exactBytes(l.BytesPerSecond))
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
