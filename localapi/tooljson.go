package localapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// EncodedTool is one tool of an encoded tool list: its JSON object as the
// engine encoded it, and its name.
type EncodedTool struct {
	Name string
	JSON json.RawMessage
}

// EncodedToolList is an encoded ToolList taken apart without decoding
// its tools (SplitToolList).
type EncodedToolList struct {
	Generation uint64
	// Tools are in the list's order: sorted by name.
	Tools  []EncodedTool
	Errors []ServerError
}

// errSplit marks an encoded tool list that is not one.
var errSplit = errors.New("not an encoded tool list")

// SplitToolList takes apart the JSON of a ToolList (EncodedTools): each
// tool's object as it is in enc (a slice of enc, not a copy) with its
// name, and the generation and errors decoded. It finds where each value
// ends and does not check the bytes inside a tool further: enc is the
// engine's own encoding. A tool list of 500 servers × 50 tools is ~16 MB,
// and decoding it to re-encode each tool cost a `remotemcp tools --json`
// most of its time (issue #21).
func SplitToolList(enc json.RawMessage) (*EncodedToolList, error) {
	out := &EncodedToolList{}
	_, err := eachMember(enc, func(key string, b []byte, i int) (int, error) {
		if key == "tools" {
			// Split as it is walked: the array is most of enc. The
			// last of two "tools" counts, as in a decode.
			out.Tools = nil
			return splitTools(b, i, &out.Tools)
		}
		end, err := valueEnd(b, i)
		if err != nil {
			return 0, err
		}
		switch key {
		case "generation":
			err = json.Unmarshal(b[i:end], &out.Generation)
		case "errors":
			err = json.Unmarshal(b[i:end], &out.Errors)
		}
		return end, err
	})
	if err != nil {
		return nil, fmt.Errorf("local API tool list: %w", err)
	}
	return out, nil
}

// splitTools splits the JSON array of tool objects at b[i] into out and
// returns where it ends.
func splitTools(b []byte, i int, out *[]EncodedTool) (int, error) {
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return i + len("null"), nil
	}
	return eachElement(b, i, func(val []byte) error {
		if val[0] != '{' {
			return fmt.Errorf("%w: a tool is not an object", errSplit)
		}
		t := EncodedTool{JSON: val}
		_, err := eachMember(val, func(key string, v []byte, j int) (int, error) {
			end, err := valueEnd(v, j)
			if err != nil || key != "name" {
				return end, err
			}
			if err := decodeString(v[j:end], &t.Name); err != nil {
				return 0, err
			}
			return 0, errFound
		})
		if err != nil && !errors.Is(err, errFound) {
			return err
		}
		*out = append(*out, t)
		return nil
	})
}

// errFound ends eachMember early.
var errFound = errors.New("found")

// eachMember walks the JSON object at the start of obj: fn gets every
// member's key, decoded, and the position of its value, and returns where
// the value ends; fn's error ends the walk. The object must be all of obj
// but for white space.
func eachMember(obj []byte, fn func(key string, b []byte, i int) (int, error)) (int, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, fmt.Errorf("%w: not an object", errSplit)
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, trailing(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return 0, fmt.Errorf("%w: a key is not a string", errSplit)
		}
		end, err := stringEnd(obj, i)
		if err != nil {
			return 0, err
		}
		var key string
		if err := decodeString(obj[i:end], &key); err != nil {
			return 0, err
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return 0, fmt.Errorf("%w: no colon after a key", errSplit)
		}
		i = skipSpace(obj, i+1)
		if end, err = fn(key, obj, i); err != nil {
			return 0, err
		}
		i = skipSpace(obj, end)
		switch {
		case i < len(obj) && obj[i] == ',':
			i = skipSpace(obj, i+1)
		case i < len(obj) && obj[i] == '}':
			return i + 1, trailing(obj, i+1)
		default:
			return 0, fmt.Errorf("%w: an object does not end", errSplit)
		}
	}
}

// eachElement calls fn with the bytes of every element of the JSON array
// at b[i], in order, and returns where the array ends.
func eachElement(b []byte, i int, fn func(val []byte) error) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return 0, fmt.Errorf("%w: not an array", errSplit)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := valueEnd(b, i)
		if err != nil {
			return 0, err
		}
		if err := fn(b[i:end]); err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return i + 1, nil
		default:
			return 0, fmt.Errorf("%w: an array does not end", errSplit)
		}
	}
}

// trailing fails unless only white space follows position i.
func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return fmt.Errorf("%w: bytes after the value", errSplit)
	}
	return nil
}

// decodeString decodes the JSON string s (quotes included).
func decodeString(s []byte, out *string) error {
	if len(s) < 2 || s[0] != '"' {
		return fmt.Errorf("%w: not a string", errSplit)
	}
	if inner := s[1 : len(s)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		*out = string(inner)
		return nil
	}
	return json.Unmarshal(s, out)
}

// endsLiteral reports whether c ends a literal or number.
func endsLiteral(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// valueEnd returns where the JSON value starting at b[i] ends: after its
// closing quote or bracket, or after a literal or number. Strings are
// skipped by their quotes (an escaped quote is one after an odd number of
// backslashes), so the walk is about as fast as a copy.
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: a value is missing", errSplit)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				// stringEnd, inline: most of a tool is strings.
				open := i
				for {
					k := bytes.IndexByte(b[i+1:], '"')
					if k < 0 {
						return 0, fmt.Errorf("%w: a string does not end", errSplit)
					}
					i += k + 1
					if b[i-1] != '\\' || !escaped(b, open, i) {
						break
					}
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, fmt.Errorf("%w: a value does not end", errSplit)
	case ',', ':', '}', ']':
		return 0, fmt.Errorf("%w: a value is missing", errSplit)
	}
	start := i
	for i < len(b) && !endsLiteral(b[i]) {
		i++
	}
	if i == start {
		return 0, fmt.Errorf("%w: a value is missing", errSplit)
	}
	return i, nil
}

// stringEnd returns the position after the closing quote of the string
// whose opening quote is b[i].
func stringEnd(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, fmt.Errorf("%w: a string does not end", errSplit)
		}
		q := j + k
		if !escaped(b, i, q) {
			return q + 1, nil
		}
		j = q + 1
	}
}

// escaped reports whether the quote b[q] of the string that opens at
// b[open] is escaped: preceded by an odd number of backslashes.
func escaped(b []byte, open, q int) bool {
	n := 0
	for p := q - 1; p > open && b[p] == '\\'; p-- {
		n++
	}
	return n%2 == 1
}
