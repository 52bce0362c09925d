package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxArgumentsSize bounds the arguments of one call (bytes).
const MaxArgumentsSize = 4 << 20

// ArgumentsError says why arguments could not be used; its message is
// written for the model.
type ArgumentsError struct{ Problem string }

// Error returns the problem, phrased for the model.
func (e *ArgumentsError) Error() string { return "arguments " + e.Problem }

// ParseArguments reads a model's tool arguments leniently (R4.1): the
// server does the final validation against its schema, so anything that
// is a JSON object goes through byte for byte. Leniency covers what models
// commonly wrap around the object: surrounding whitespace, a byte order
// mark, a Markdown code fence, and a JSON string that holds the object.
// Empty input and null mean no arguments ({}). Anything else is an
// *ArgumentsError whose message tells the model what to send.
func ParseArguments(raw []byte) (json.RawMessage, error) {
	if len(raw) > MaxArgumentsSize {
		return nil, &ArgumentsError{fmt.Sprintf("are %d bytes long; the limit is %d", len(raw), MaxArgumentsSize)}
	}
	s := bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	s = bytes.TrimSpace(s)
	s = stripCodeFence(s)
	if len(s) == 0 || string(s) == "null" {
		return json.RawMessage("{}"), nil
	}
	if s[0] == '"' {
		// A double-encoded object: "{\"a\":1}".
		var inner string
		if json.Unmarshal(s, &inner) == nil {
			in := bytes.TrimSpace([]byte(inner))
			if len(in) > 0 && in[0] == '{' && json.Valid(in) {
				return json.RawMessage(in), nil
			}
		}
	}
	if !json.Valid(s) {
		var v any
		err := json.Unmarshal(s, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &ArgumentsError{fmt.Sprintf("are not valid JSON (%v at byte %d); send a JSON object that matches the tool's input schema", se, se.Offset)}
		}
		return nil, &ArgumentsError{fmt.Sprintf("are not valid JSON (%v); send a JSON object that matches the tool's input schema", err)}
	}
	if s[0] != '{' {
		return nil, &ArgumentsError{fmt.Sprintf("must be a JSON object, not %s; send an object that matches the tool's input schema", jsonKind(s[0]))}
	}
	return json.RawMessage(bytes.Clone(s)), nil
}

// stripCodeFence removes a surrounding ```json … ``` fence.
func stripCodeFence(s []byte) []byte {
	if !bytes.HasPrefix(s, []byte("```")) || !bytes.HasSuffix(s, []byte("```")) || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	nl := bytes.IndexByte(inner, '\n')
	if nl < 0 {
		return bytes.TrimSpace(inner)
	}
	// The first line is the info string ("json"), unless the object
	// starts on it.
	if first := bytes.TrimSpace(inner[:nl]); len(first) == 0 || first[0] != '{' {
		inner = inner[nl+1:]
	}
	return bytes.TrimSpace(inner)
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
