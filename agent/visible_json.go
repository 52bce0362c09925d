package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ShowHiddenJSON returns the JSON value raw with ShowHidden applied to
// every string in it, object keys included: a tool's input or output
// schema (property descriptions, titles, enum values, defaults, keys) is
// read by the agent's model as much as the tool's description, and an
// instruction spelled in tag characters there is just as invisible to a
// person (issue #20 item 3, review finding 2).
//
// raw itself (the same bytes) is returned when no string holds a Hidden
// character: issue #19 passes a server's schemas through byte for byte,
// and only a schema that hides something is rewritten. A rewritten value
// keeps its members' order, duplicates and numbers as written; strings are
// re-encoded (escapes may change, the text does not). A renamed key can
// then differ from what the server expects: the server hid something in
// it, and the agent sees what it is. raw that is not one JSON value is
// returned unchanged (it is refused where it is parsed).
//
// The walk is iterative (json.Decoder tokens, an explicit stack), so a
// deeply nested value costs memory in proportion to its size and no
// recursion.
func ShowHiddenJSON(raw json.RawMessage) json.RawMessage {
	if !mayHideJSON(raw) {
		return raw
	}
	out, changed, err := showHiddenJSON(raw)
	if err != nil || !changed {
		return raw
	}
	return out
}

// mayHideJSON reports whether raw may hold a Hidden character in a
// string: all of them are DEL or above it (in UTF-8, every byte of a
// non-ASCII character is), or are written as \u escapes (controls must
// be).
func mayHideJSON(raw []byte) bool {
	for i, c := range raw {
		if c >= 0x7f || c == '\\' && i+1 < len(raw) && raw[i+1] == 'u' {
			return true
		}
	}
	return false
}

var errNotOneValue = errors.New("not one JSON value")

// showHiddenJSON rewrites raw token by token; changed says whether any
// string changed.
func showHiddenJSON(raw []byte) (out []byte, changed bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	b.Grow(len(raw) + 64)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep '<', '>' and '&' as the server wrote them
	// stack holds, per open container, whether it is an object and how
	// many tokens (keys and values) it has had.
	type frame struct {
		obj bool
		n   int
	}
	var stack []frame
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1] // the decoder checked the nesting
			b.WriteByte(byte(d))
			continue
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return nil, false, errNotOneValue
			}
		} else {
			top := &stack[len(stack)-1]
			switch {
			case top.n == 0:
			case top.obj && top.n%2 == 1:
				b.WriteByte(':')
			default:
				b.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			stack = append(stack, frame{obj: v == '{'})
		case string:
			s := ShowHidden(v)
			changed = changed || s != v
			if err := enc.Encode(s); err != nil {
				return nil, false, err
			}
			b.Truncate(b.Len() - 1) // Encode's newline
		case json.Number:
			b.WriteString(string(v))
		case bool:
			if v {
				b.WriteString("true")
			} else {
				b.WriteString("false")
			}
		case nil:
			b.WriteString("null")
		}
	}
	if values != 1 || len(stack) != 0 {
		return nil, false, errNotOneValue
	}
	return b.Bytes(), changed, nil
}
