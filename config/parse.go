package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// ParseError is a JSON document that cannot be read at all: malformed,
// truncated, empty, followed by trailing data, or of the wrong overall shape.
// Problems inside a well-formed server are *FieldError instead.
type ParseError struct {
	Offset  int // byte offset into the document
	Line    int // 1-based
	Column  int // 1-based, in characters
	Problem string
}

// Error returns "line L, column C: problem".
func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Problem)
}

// ParseServers reads a list of servers in our own JSON shape, either a JSON
// array of servers or {"servers": [...]}, and validates them together
// (ValidateAll: each valid, ids unique). Unknown and duplicated fields
// are refused, with a suggestion when the name looks like a typo; absent
// fields take their defaults. Errors are *ParseError for an unreadable
// document and *FieldError for a field that is wrong, both saying where;
// a field error in a server without a usable id names it servers[i].
func ParseServers(data []byte) ([]Server, error) {
	doc := blankBOM(data)
	if err := checkJSON(doc); err != nil {
		return nil, err
	}
	start := skipSpace(doc, 0)
	listOff := start
	switch doc[start] {
	case '[':
	case '{':
		members, _ := objectMembers(doc[start:])
		found := false
		for _, m := range members {
			switch m.key {
			case "servers":
				if found {
					return nil, posError(doc, start+m.keyOff, `"servers" appears twice; keep one`)
				}
				found = true
				listOff = start + m.off
				if m.raw[0] != '[' {
					if m.raw[0] == '{' {
						return nil, posError(doc, listOff, `"servers" must be an array of servers with ids; {"servers": {name: ...}} is VS Code's format: import it instead`)
					}
					return nil, posError(doc, listOff, `"servers" must be an array, not `+jsonKind(m.raw))
				}
			case "mcpServers":
				return nil, posError(doc, start+m.keyOff, `unknown top-level field "mcpServers": this looks like a Claude, Cursor or Windsurf config; import it instead`)
			default:
				return nil, posError(doc, start+m.keyOff, fmt.Sprintf(`unknown top-level field %q; expected {"servers": [...]}`, m.key))
			}
		}
		if !found {
			return nil, posError(doc, start, `missing "servers"; expected a JSON array of servers or {"servers": [...]}`)
		}
	default:
		return nil, posError(doc, start, `expected a JSON array of servers or {"servers": [...]}, not `+jsonKind(doc[start:]))
	}

	elems, _ := arrayElements(doc[listOff:])
	out := make([]Server, 0, len(elems))
	for i, el := range elems {
		s, err := decodeServer(doc, listOff+el.off, el.raw, fmt.Sprintf("servers[%d].", i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := ValidateAll(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Field names as written by encoding/json, taken from the struct tags so
// that a field added to Server is known here without a second list.
var (
	serverFields  = jsonFieldNames(reflect.TypeFor[Server]())
	authFields    = jsonFieldNames(reflect.TypeFor[Auth]())
	bindingFields = jsonFieldNames(reflect.TypeFor[Binding]())
	limitFields   = jsonFieldNames(reflect.TypeFor[Limits]())
)

func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// decodeServer decodes one server object found at offset base of doc.
// prefix ("servers[3].") names its position for errors when it has no
// usable id.
//
// Long: the strict checks of the server object and its nested limits,
// auth and binding members (with their positions in doc), then the decode
// that backs them up, whose type errors are turned into the same
// FieldError with line and column; both need the id found first.
func decodeServer(doc []byte, base int, raw []byte, prefix string) (Server, error) {
	members, ok := objectMembers(raw)
	if !ok {
		return Server{}, posError(doc, base, "a server must be a JSON object, not "+jsonKind(raw))
	}
	// Name the server by its id in later errors when it has a valid one:
	// "server github: enabled: ..." is easier to find than "servers[7]".
	id := ""
	for _, m := range members {
		var s string
		if m.key == "id" && json.Unmarshal(m.raw, &s) == nil && ValidateID(s) == nil {
			id, prefix = s, ""
		}
	}
	fieldErr := func(field, problem string) error {
		return &FieldError{ServerID: id, Field: prefix + field, Problem: problem}
	}

	if err := checkMembers(doc, base, members, serverFields, "", fieldErr); err != nil {
		return Server{}, err
	}
	for _, m := range members {
		if m.key != "limits" {
			continue
		}
		lm, ok := objectMembers(m.raw)
		if !ok {
			continue // the decoder below reports the type
		}
		if err := checkMembers(doc, base+m.off, lm, limitFields, "limits.", fieldErr); err != nil {
			return Server{}, err
		}
		for _, f := range lm {
			if f.key == "listTimeout" {
				if p := checkDuration(f.raw); p != "" {
					return Server{}, fieldErr("limits.listTimeout", p)
				}
			}
		}
	}
	authSet := false
	for _, m := range members {
		if m.key != "auth" || string(m.raw) == "null" {
			continue
		}
		authSet = true
		am, ok := objectMembers(m.raw)
		if !ok {
			continue // the decoder below reports the type
		}
		if err := checkMembers(doc, base+m.off, am, authFields, "auth.", fieldErr); err != nil {
			return Server{}, err
		}
		for _, b := range am {
			if bm, ok := objectMembers(b.raw); ok && b.key == "binding" {
				if err := checkMembers(doc, base+m.off+b.off, bm, bindingFields, "auth.binding.", fieldErr); err != nil {
					return Server{}, err
				}
			}
		}
	}

	s := Server{Enabled: true, ConnectOnStartup: true}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // checkMembers went first; this is the backstop
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		var fe *FieldError
		switch {
		case errors.As(err, &te) && te.Field != "":
			line, col := position(doc, base+valueOffset(raw, te.Field, int(te.Offset)))
			want := jsonTypeName(te.Type)
			// The error names the slice field but the element's type.
			if ft := fieldType(reflect.TypeFor[Server](), te.Field); ft != nil && ft.Kind() == reflect.Slice && ft.Elem() == te.Type {
				want = "an array of " + strings.TrimPrefix(strings.TrimPrefix(want, "an "), "a ") + "s, and this element is"
				return Server{}, fieldErr(te.Field, fmt.Sprintf("must be %s %s (line %d, column %d)",
					want, jsonValueName(te.Value, te.Type), line, col))
			}
			return Server{}, fieldErr(te.Field, fmt.Sprintf("must be %s, not %s (line %d, column %d)",
				want, jsonValueName(te.Value, te.Type), line, col))
		case errors.As(err, &te):
			return Server{}, posError(doc, base, "a server must be a JSON object, not "+jsonKind(raw))
		case errors.As(err, &fe):
			return Server{}, fieldErr(fe.Field, fe.Problem)
		default:
			return Server{}, fieldErr("(server)", err.Error())
		}
	}
	if !authSet {
		s.Auth.Kind = AuthNone
	}
	return s, nil
}

// valueOffset finds where the value of a dotted field path starts in the
// object raw, so that errors point at the value rather than past it;
// fallback is returned when the path cannot be followed.
func valueOffset(raw []byte, path string, fallback int) int {
	total := 0
	for name := range strings.SplitSeq(path, ".") {
		members, ok := objectMembers(raw)
		if !ok {
			return fallback
		}
		var hit *jsonMember
		for k := range members {
			if members[k].key == name { // the last of duplicates wins, as in encoding/json
				hit = &members[k]
			}
		}
		if hit == nil {
			return fallback
		}
		raw, total = hit.raw, total+hit.off
	}
	return total
}

// fieldType follows a dotted JSON field path ("auth.scopes") through t.
func fieldType(t reflect.Type, path string) reflect.Type {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := range t.NumField() {
			if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
				next = t.Field(i).Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	return t
}

// checkMembers refuses duplicated and unknown keys. Keys must match exactly:
// encoding/json would also accept "URL" for "url", but nothing we write
// looks like that, and a second spelling invites a second, differing value.
func checkMembers(doc []byte, base int, members []jsonMember, known []string, path string, fieldErr func(field, problem string) error) error {
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		line, col := position(doc, base+m.keyOff)
		if seen[m.key] {
			return fieldErr(path+m.key, fmt.Sprintf("appears twice (second at line %d, column %d); keep one", line, col))
		}
		seen[m.key] = true
		isKnown := false
		for _, k := range known {
			isKnown = isKnown || k == m.key
		}
		if !isKnown {
			return fieldErr(path+m.key, fmt.Sprintf("unknown field (line %d, column %d)%s; known fields: %s",
				line, col, suggest(m.key, known), strings.Join(known, ", ")))
		}
	}
	return nil
}

// suggest names the known field a mistyped one most likely meant.
func suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf("; did you mean %q? names are case-sensitive", k)
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(key)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance, for typo suggestions only.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30 // not worth comparing; no field name is that long
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	}
	return t.String()
}

// jsonValueName turns UnmarshalTypeError.Value ("string", "number 1.5")
// into words; a number that is integral but was refused is out of range.
func jsonValueName(v string, want reflect.Type) string {
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true/false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		if strings.ContainsAny(n, ".eE") || want.Kind() == reflect.String {
			return n
		}
		return n + ", which is out of range"
	}
	return v
}

// jsonKind names the kind of the JSON value raw starts with.
func jsonKind(raw []byte) string {
	i := skipSpace(raw, 0)
	if i >= len(raw) {
		return "nothing"
	}
	switch raw[i] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "true/false"
	case 'n':
		return "null"
	}
	return "a number"
}

// checkJSON reports the first syntax problem of doc, with its position, or
// data after the first value.
func checkJSON(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var v json.RawMessage
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == io.EOF:
		return posError(doc, len(doc), "the document is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return posError(doc, len(doc), "the document ends in the middle of a JSON value; is it truncated?")
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		return posError(doc, max(int(se.Offset)-1, 0), "invalid JSON: "+se.Error())
	case err != nil:
		return posError(doc, int(dec.InputOffset()), "invalid JSON: "+err.Error())
	}
	if end := skipSpace(doc, int(dec.InputOffset())); end < len(doc) {
		return posError(doc, end, "unexpected data after the JSON value; give a single JSON document")
	}
	return nil
}

func posError(doc []byte, off int, problem string) *ParseError {
	line, col := position(doc, off)
	return &ParseError{Offset: off, Line: line, Column: col, Problem: problem}
}

// position converts a byte offset into a 1-based line and column, the
// column counted in characters as editors count it.
func position(doc []byte, off int) (line, col int) {
	off = min(max(off, 0), len(doc))
	before := doc[:off]
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[lineStart:]) + 1
}

// blankBOM replaces a leading UTF-8 byte order mark, which Windows editors
// like to add, with spaces: JSON forbids it, and spaces keep offsets intact.
func blankBOM(data []byte) []byte {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		d := bytes.Clone(data)
		copy(d, "   ")
		return d
	}
	return data
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipPunct skips whitespace and the separator c (',' or ':').
func skipPunct(b []byte, i int, c byte) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == c) {
		i++
	}
	return i
}

// jsonMember is one member of a JSON object, in document order, with the
// offsets (relative to the object) of its key and value.
type jsonMember struct {
	key    string
	keyOff int
	off    int
	raw    json.RawMessage
}

// objectMembers lists the members of the JSON object raw, in order and with
// duplicates kept (encoding/json into a map would lose both). ok is false
// when raw is not an object. raw must be well-formed JSON.
func objectMembers(raw []byte) (members []jsonMember, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		keyOff := skipPunct(raw, int(dec.InputOffset()), ',')
		t, err := dec.Token()
		if err != nil {
			return members, false
		}
		key, _ := t.(string)
		off := skipPunct(raw, int(dec.InputOffset()), ':')
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return members, false
		}
		members = append(members, jsonMember{key: key, keyOff: keyOff, off: off, raw: v})
	}
	return members, true
}

// arrayElements lists the elements of the JSON array raw with their offsets.
func arrayElements(raw []byte) (elems []jsonMember, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, false
	}
	for dec.More() {
		off := skipPunct(raw, int(dec.InputOffset()), ',')
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return elems, false
		}
		elems = append(elems, jsonMember{off: off, keyOff: off, raw: v})
	}
	return elems, true
}
