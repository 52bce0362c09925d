package elicit

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Limits bound the questions a server may ask (issue #10). A server's
// question is untrusted input that a person has to read and that is
// stored until it is answered: a question over any limit is declined (the
// reason, naming the limit, is logged) and makes no card. Every default
// is far beyond a form a person can sensibly fill in.
//
// A zero field takes its value from DefaultLimits, so the zero Limits is
// DefaultLimits and a caller may set only the fields it wants to change.
// Lengths in characters count Unicode code points.
type Limits struct {
	// MaxMessage is the most characters of a question's message.
	MaxMessage int `json:"maxMessage,omitempty"`
	// MaxSchemaBytes is the largest requested schema, in bytes of JSON.
	// A larger schema is refused before any of it is parsed.
	MaxSchemaBytes int `json:"maxSchemaBytes,omitempty"`
	// MaxFields is the most properties (form fields) of a schema. Counting
	// stops at the first one over, before any field is parsed.
	MaxFields int `json:"maxFields,omitempty"`
	// MaxEnumValues is the most choices of one single- or multi-select
	// field (enum, oneOf or anyOf values).
	MaxEnumValues int `json:"maxEnumValues,omitempty"`
	// MaxTitle is the most characters of a short label: a field's name
	// or title, a choice's value or title, the schema's title.
	MaxTitle int `json:"maxTitle,omitempty"`
	// MaxDescription is the most characters of a field's or the schema's
	// description.
	MaxDescription int `json:"maxDescription,omitempty"`
}

// DefaultLimits are the limits of a zero Limits field.
var DefaultLimits = Limits{
	MaxMessage:     4096,
	MaxSchemaBytes: 64 << 10,
	MaxFields:      50,
	MaxEnumValues:  200,
	MaxTitle:       256,
	MaxDescription: 2048,
}

// storedLimits re-read a stored card's schema (Card.Form): it passed the
// limits of the instance that asked when the card was made, which may be
// above this one's, and refusing it now would hide the fields of a card
// the person still has to answer. The schema's consistency is still
// checked.
var storedLimits = Limits{
	MaxMessage: math.MaxInt, MaxSchemaBytes: math.MaxInt, MaxFields: math.MaxInt,
	MaxEnumValues: math.MaxInt, MaxTitle: math.MaxInt, MaxDescription: math.MaxInt,
}

// withDefaults fills the zero (or negative) fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	fill := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	fill(&l.MaxMessage, DefaultLimits.MaxMessage)
	fill(&l.MaxSchemaBytes, DefaultLimits.MaxSchemaBytes)
	fill(&l.MaxFields, DefaultLimits.MaxFields)
	fill(&l.MaxEnumValues, DefaultLimits.MaxEnumValues)
	fill(&l.MaxTitle, DefaultLimits.MaxTitle)
	fill(&l.MaxDescription, DefaultLimits.MaxDescription)
	return l
}

// over fills l's zero fields from base (not from DefaultLimits): a
// server's own limits override the instance's field by field.
func (l Limits) over(base Limits) Limits {
	fill := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	fill(&l.MaxMessage, base.MaxMessage)
	fill(&l.MaxSchemaBytes, base.MaxSchemaBytes)
	fill(&l.MaxFields, base.MaxFields)
	fill(&l.MaxEnumValues, base.MaxEnumValues)
	fill(&l.MaxTitle, base.MaxTitle)
	fill(&l.MaxDescription, base.MaxDescription)
	return l
}

// ErrOverLimit is wrapped by every *LimitError.
var ErrOverLimit = errors.New("over a question limit")

// LimitError is a question over one of its Limits.
type LimitError struct {
	// Limit names the Limits field, e.g. "MaxFields".
	Limit string
	// Max is the limit's value.
	Max int
	// What says what is over it, e.g. `property "x": title: 300
	// characters`.
	What string
}

// Error names what is over which limit.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s, over the limit %s = %d", e.What, e.Limit, e.Max)
}

// Unwrap makes errors.Is(err, ErrOverLimit) hold.
func (e *LimitError) Unwrap() error { return ErrOverLimit }

// checkText refuses a text longer than max characters. Only a text of more
// than max bytes can be, so short texts are not counted at all.
func checkText(what, s string, max int, limit string) error {
	if len(s) <= max {
		return nil
	}
	if n := utf8.RuneCountInString(s); n > max {
		return &LimitError{Limit: limit, Max: max, What: fmt.Sprintf("%s: %d characters", what, n)}
	}
	return nil
}

// CheckMessage refuses a question's message over l.MaxMessage.
func (l Limits) CheckMessage(msg string) error {
	l = l.withDefaults()
	return checkText("message", msg, l.MaxMessage, "MaxMessage")
}
