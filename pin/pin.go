// Package pin computes the pinned form of a tool definition (issue #20
// item 3, "tool pinning"): a canonical JSON encoding of what a server says
// about a tool, its SHA-256, and a readable diff between two definitions.
//
// A definition comes from an untrusted server, so every function here is
// bounded (MaxDefinition bytes, MaxDepth levels of nesting) and never
// panics; input that cannot be pinned is an error, never a guess.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of what can be pinned. A tool over them is not offered at all:
// a definition that cannot be pinned could change unseen.
const (
	// MaxDefinition bounds the encoded definition (either form) in bytes.
	MaxDefinition = 1 << 20
	// MaxDepth bounds the nesting of a schema or of annotations.
	MaxDepth = 128
)

// Errors of Canonical and Parse.
var (
	ErrTooLarge  = errors.New("tool definition is larger than the pinning limit")
	ErrTooDeep   = errors.New("tool definition nests deeper than the pinning limit")
	ErrDuplicate = errors.New("tool definition has a duplicate object key (hosts may read either value)")
	ErrInvalid   = errors.New("tool definition is not valid JSON")
)

// Definition is what is pinned of a tool: every part the model or the
// person reads, or that shapes the arguments. The name is the key it is
// pinned under, not part of it. _meta and icons are not pinned: they are
// protocol metadata that neither the model reads nor a host applies to
// arguments. Title is pinned (though the issue lists only description,
// schemas and annotations): hosts show it to the person, and some put it
// in front of the model, so a changed title can carry an instruction as
// well as a changed description.
type Definition struct {
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Canonical returns the canonical encoding of d: JSON in the manner of RFC
// 8785 — object keys sorted (by bytes), no insignificant white space,
// strings escaped only where JSON requires, numbers in their shortest
// round-trip form — so that two encodings of the same definition pin the
// same. Empty parts and a JSON null are left out.
func Canonical(d Definition) ([]byte, error) {
	if n := len(d.Title) + len(d.Description) + len(d.InputSchema) + len(d.OutputSchema) + len(d.Annotations); n > MaxDefinition {
		return nil, fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, n, MaxDefinition)
	}
	if !utf8.ValidString(d.Title) || !utf8.ValidString(d.Description) {
		// Two texts must never pin alike: invalid bytes would all print
		// as U+FFFD.
		return nil, fmt.Errorf("%w: title or description is not UTF-8", ErrInvalid)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	field := func(name string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(&b, name)
		b.WriteByte(':')
	}
	// Keys in byte order: annotations, description, inputSchema,
	// outputSchema, title.
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"annotations", d.Annotations}} {
		if err := rawField(&b, f.name, f.raw, field); err != nil {
			return nil, err
		}
	}
	if d.Description != "" {
		field("description")
		writeString(&b, d.Description)
	}
	if err := rawField(&b, "inputSchema", d.InputSchema, field); err != nil {
		return nil, err
	}
	if err := rawField(&b, "outputSchema", d.OutputSchema, field); err != nil {
		return nil, err
	}
	if d.Title != "" {
		field("title")
		writeString(&b, d.Title)
	}
	b.WriteByte('}')
	if b.Len() > MaxDefinition {
		return nil, fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, b.Len(), MaxDefinition)
	}
	return b.Bytes(), nil
}

// rawField writes name and the canonical form of raw, unless raw is
// empty or null.
func rawField(b *bytes.Buffer, name string, raw json.RawMessage, field func(string)) error {
	v, err := decode(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if v == nil {
		return nil
	}
	field(name)
	encode(b, v)
	return nil
}

// Hash is the pin of a canonical encoding: "sha256:" and 64 hex digits.
func Hash(canonical []byte) string {
	s := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Of returns the canonical encoding of d and its hash.
func Of(d Definition) (canonical []byte, hash string, err error) {
	c, err := Canonical(d)
	if err != nil {
		return nil, "", err
	}
	return c, Hash(c), nil
}

// Parse reads a canonical encoding (as stored) back into a Definition.
func Parse(canonical []byte) (Definition, error) {
	if len(canonical) > MaxDefinition {
		return Definition{}, fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, len(canonical), MaxDefinition)
	}
	v, err := decode(canonical)
	if err != nil {
		return Definition{}, err
	}
	obj, ok := v.(object)
	if !ok {
		return Definition{}, fmt.Errorf("%w: a definition is a JSON object", ErrInvalid)
	}
	var d Definition
	for _, kv := range obj {
		switch kv.key {
		case "title", "description":
			s, ok := kv.val.(string)
			if !ok {
				return Definition{}, fmt.Errorf("%w: %s is not a string", ErrInvalid, kv.key)
			}
			if kv.key == "title" {
				d.Title = s
			} else {
				d.Description = s
			}
		case "inputSchema", "outputSchema", "annotations":
			var b bytes.Buffer
			encode(&b, kv.val)
			switch kv.key {
			case "inputSchema":
				d.InputSchema = b.Bytes()
			case "outputSchema":
				d.OutputSchema = b.Bytes()
			default:
				d.Annotations = b.Bytes()
			}
		}
	}
	return d, nil
}

// The decoded forms: object keeps its members sorted by key; numbers
// are kept as their canonical text.
type (
	object []member
	member struct {
		key string
		val any
	}
	number string
)

// decode parses one JSON value with bounded depth, refusing duplicate
// keys and trailing data. Empty input and null give nil.
func decode(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the value", ErrInvalid)
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("%w (%d levels)", ErrTooDeep, MaxDepth)
		}
		switch t {
		case '{':
			var obj object
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("%w: object key is not a string", ErrInvalid)
				}
				if seen[k] {
					return nil, fmt.Errorf("%w: %q", ErrDuplicate, truncate(k, 64))
				}
				seen[k] = true
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{k, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			slices.SortFunc(obj, func(a, b member) int { return strings.Compare(a.key, b.key) })
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("%w: unexpected %v", ErrInvalid, t)
	case json.Number:
		n, err := canonicalNumber(string(t))
		if err != nil {
			return nil, err
		}
		return number(n), nil
	case nil:
		// A JSON null nested in a value is kept (as a nil interface would
		// be lost, mark it).
		if depth == 0 {
			return nil, nil
		}
		return null{}, nil
	default:
		return t, nil // string, bool
	}
}

type null struct{}

// canonicalNumber is the shortest text that round-trips the number as a
// float64; an integer literal too large for that keeps its digits (two
// different large integers must not pin alike).
func canonicalNumber(s string) (string, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("%w: number %s out of range", ErrInvalid, truncate(s, 32))
	}
	if !strings.ContainsAny(s, ".eE") && math.Abs(f) >= 1<<53 {
		return s, nil // JSON has no leading zeros: the literal is canonical
	}
	if f == 0 {
		return "0", nil // -0 and 0 are one number
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64), nil // as ECMAScript prints it
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

func encode(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case object:
		b.WriteByte('{')
		for i, m := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.key)
			b.WriteByte(':')
			encode(b, m.val)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			encode(b, e)
		}
		b.WriteByte(']')
	case string:
		writeString(b, t)
	case number:
		b.WriteString(string(t))
	case bool:
		b.WriteString(strconv.FormatBool(t))
	default: // null
		b.WriteString("null")
	}
}

// writeString writes s as a JSON string, escaping only what JSON requires
// (RFC 8785 §3.2.2.2).
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r) // invalid UTF-8 became U+FFFD
		}
	}
	b.WriteByte('"')
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
