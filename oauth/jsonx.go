package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// object is one JSON object from outside, its members kept raw so that
// every field we use is type-checked on the wire form before it is
// trusted (R2.11), and fields we do not use cannot make a document fail.
type object map[string]json.RawMessage

// parseObject reads exactly one JSON object. A duplicated member name is
// refused: JSON parsers disagree on which copy wins, and a document that
// says two things about its client_id or issuer is not one to act on.
func parseObject(body []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	obj := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("not a JSON object")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("member %q appears more than once", sanitize(key, 60))
		}
		obj[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// has reports whether the member is present and not null.
func (o object) has(key string) bool {
	raw, ok := o[key]
	return ok && !isNull(raw)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// str returns a string member; absent or null gives "" and false.
func (o object) str(key string) (string, bool, error) {
	if !o.has(key) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(o[key], &s); err != nil {
		return "", true, fmt.Errorf("%s is %s, not a string", key, kind(o[key]))
	}
	return s, true, nil
}

// strList returns an array-of-strings member; absent or null gives nil and false.
func (o object) strList(key string) ([]string, bool, error) {
	if !o.has(key) {
		return nil, false, nil
	}
	var l []string
	if err := json.Unmarshal(o[key], &l); err != nil {
		return nil, true, fmt.Errorf("%s is not an array of strings", key)
	}
	return l, true, nil
}

// boolean returns a boolean member; absent or null gives false.
func (o object) boolean(key string) (bool, error) {
	if !o.has(key) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(o[key], &b); err != nil {
		return false, fmt.Errorf("%s is %s, not a boolean", key, kind(o[key]))
	}
	return b, nil
}

// integer returns a non-negative integer member (seconds, timestamps);
// absent or null gives 0 and false.
func (o object) integer(key string) (int64, bool, error) {
	if !o.has(key) {
		return 0, false, nil
	}
	var n json.Number
	if err := json.Unmarshal(o[key], &n); err != nil {
		return 0, true, fmt.Errorf("%s is %s, not a number", key, kind(o[key]))
	}
	v, err := n.Int64()
	if err != nil {
		// Some servers send 3600.0; accept whole floats.
		f, ferr := n.Float64()
		if ferr != nil || f != float64(int64(f)) {
			return 0, true, fmt.Errorf("%s is not a whole number", key)
		}
		v = int64(f)
	}
	if v < 0 {
		return 0, true, fmt.Errorf("%s is negative", key)
	}
	return v, true, nil
}

// kind names the JSON type of a raw value for error messages.
func kind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "empty"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
