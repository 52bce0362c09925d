package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// FieldType is the type of one form field. Form-mode elicitation only
// allows flat objects of primitive properties (MCP 2025-11-25, "Requested
// Schema"); a multi-select enum is the one array form.
type FieldType string

// The field types of a form.
const (
	TypeString  FieldType = "string"
	TypeNumber  FieldType = "number"
	TypeInteger FieldType = "integer"
	TypeBoolean FieldType = "boolean"
	// TypeMultiSelect is an array of strings drawn from Enum.
	TypeMultiSelect FieldType = "array"
)

// Field is one property of a requested schema, in the form a settings page
// or CLI renders it.
type Field struct {
	Name        string    `json:"name"`
	Title       string    `json:"title,omitempty"`
	Description string    `json:"description,omitempty"`
	Type        FieldType `json:"type"`
	Required    bool      `json:"required,omitempty"`
	// Enum lists the allowed values of a string or multi-select field;
	// EnumTitles, when set, has the display title of each value.
	Enum       []string `json:"enum,omitempty"`
	EnumTitles []string `json:"enumTitles,omitempty"`
	// Format is email, uri, date or date-time for strings.
	Format    string   `json:"format,omitempty"`
	MinLength *int     `json:"minLength,omitempty"`
	MaxLength *int     `json:"maxLength,omitempty"`
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinItems  *int     `json:"minItems,omitempty"`
	MaxItems  *int     `json:"maxItems,omitempty"`
	// Default is applied when the person leaves the field out.
	Default any `json:"default,omitempty"`
}

// Form is a parsed requested schema: its fields in the order the server's
// schema lists its properties (issue #8 item 16). The order is read from
// the raw schema bytes; the session layer hands those over as sent (go-sdk
// alone would pass a Go map, whose order is lost).
type Form struct {
	Fields []Field `json:"fields"`
}

// ErrInvalidAnswer is wrapped by every *ValidationError.
var ErrInvalidAnswer = errors.New("invalid answer")

// FieldProblem is what is wrong with one field of an answer.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// ValidationError lists every problem of an answer, so a form can mark all
// bad fields at once.
type ValidationError struct {
	Problems []FieldProblem
}

// Error lists every problem, each with its field.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = fmt.Sprintf("field %q: %s", p.Field, p.Problem)
	}
	return "invalid answer: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalidAnswer) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalidAnswer }

// rawProp is the subset of JSON Schema a form property may use.
type rawProp struct {
	Type        json.RawMessage   `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Enum        []json.RawMessage `json:"enum"`
	EnumNames   []string          `json:"enumNames"`
	OneOf       []rawConst        `json:"oneOf"`
	AnyOf       []rawConst        `json:"anyOf"`
	Items       *rawProp          `json:"items"`
	Format      string            `json:"format"`
	MinLength   *int              `json:"minLength"`
	MaxLength   *int              `json:"maxLength"`
	Minimum     *float64          `json:"minimum"`
	Maximum     *float64          `json:"maximum"`
	MinItems    *int              `json:"minItems"`
	MaxItems    *int              `json:"maxItems"`
	Default     json.RawMessage   `json:"default"`
	Properties  json.RawMessage   `json:"properties"`
}

type rawConst struct {
	Const json.RawMessage `json:"const"`
	Title string          `json:"title"`
}

// Bounds of a requested schema a form is made from. They are far beyond
// any question a person can answer and keep a hostile server's schema from
// costing more than a glance.
const (
	// MaxSchemaSize is the largest requested schema, in bytes.
	MaxSchemaSize = 256 << 10
	// MaxFields is the most properties a form may have.
	MaxFields = 100
)

// ParseForm reads a requested schema. It refuses what form mode does not
// allow (nested objects, non-primitive types), so a card is only shown for
// a question the person can actually answer. Fields come in the order the
// schema's "properties" object lists them; a property named twice, more
// than MaxFields properties or a schema over MaxSchemaSize bytes is refused.
func ParseForm(schema json.RawMessage) (*Form, error) {
	if len(schema) == 0 || string(schema) == "null" {
		return &Form{}, nil
	}
	if len(schema) > MaxSchemaSize {
		return nil, fmt.Errorf("requested schema: %d bytes; the limit is %d", len(schema), MaxSchemaSize)
	}
	var root struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("requested schema: %v", err)
	}
	if t := typeName(root.Type); t != "" && t != "object" {
		return nil, fmt.Errorf("requested schema: type %q, want object", t)
	}
	props, err := orderedMembers(root.Properties)
	if err != nil {
		return nil, fmt.Errorf("requested schema: properties: %w", err)
	}
	f := &Form{}
	for _, p := range props {
		fd, err := parseField(p.name, p.raw)
		if err != nil {
			return nil, fmt.Errorf("requested schema: property %q: %w", p.name, err)
		}
		fd.Required = slices.Contains(root.Required, p.name)
		f.Fields = append(f.Fields, fd)
	}
	return f, nil
}

type member struct {
	name string
	raw  json.RawMessage
}

// orderedMembers lists the members of a JSON object in document order,
// which a Go map would lose. Absent or null is no members.
func orderedMembers(obj json.RawMessage) ([]member, error) {
	if len(obj) == 0 || string(obj) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("must be an object")
	}
	var out []member
	seen := make(map[string]bool)
	for dec.More() {
		if len(out) == MaxFields {
			return nil, fmt.Errorf("more than %d properties", MaxFields)
		}
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		if seen[name] {
			return nil, fmt.Errorf("property %q appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{name, raw})
	}
	return out, nil
}

func typeName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func parseField(name string, raw json.RawMessage) (Field, error) {
	var p rawProp
	if err := json.Unmarshal(raw, &p); err != nil {
		return Field{}, err
	}
	if len(p.Properties) > 0 {
		return Field{}, errors.New("nested objects are not allowed in a form")
	}
	fd := Field{Name: name, Title: p.Title, Description: p.Description, Format: p.Format,
		MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum,
		MinItems: p.MinItems, MaxItems: p.MaxItems}
	t := typeName(p.Type)
	if len(p.Type) > 0 && t == "" {
		return Field{}, errors.New("type must be a single type name")
	}
	switch {
	case len(p.Enum) > 0 || len(p.OneOf) > 0:
		if t != "" && t != "string" {
			return Field{}, fmt.Errorf("enum of type %q; only string enums are allowed", t)
		}
		t = "string"
		var err error
		if fd.Enum, fd.EnumTitles, err = enumValues(p.Enum, p.EnumNames, p.OneOf); err != nil {
			return Field{}, err
		}
	case t == "array":
		if p.Items == nil {
			return Field{}, errors.New("array without items")
		}
		var err error
		if fd.Enum, fd.EnumTitles, err = enumValues(p.Items.Enum, p.Items.EnumNames, p.Items.AnyOf); err != nil {
			return Field{}, err
		}
		if len(fd.Enum) == 0 {
			return Field{}, errors.New("array items must be an enum (multi-select)")
		}
	}
	switch t {
	case "string", "number", "integer", "boolean", "array":
		fd.Type = FieldType(t)
	case "":
		return Field{}, errors.New("no type")
	default:
		return Field{}, fmt.Errorf("type %q is not allowed in a form", t)
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var d any
		if err := json.Unmarshal(p.Default, &d); err != nil {
			return Field{}, fmt.Errorf("default: %v", err)
		}
		v, prob := fd.coerce(d)
		if prob != "" {
			return Field{}, fmt.Errorf("default: %s", prob)
		}
		fd.Default = v
	}
	return fd, nil
}

func enumValues(enum []json.RawMessage, names []string, consts []rawConst) (vals, titles []string, err error) {
	for _, raw := range enum {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, nil, fmt.Errorf("enum value %s is not a string", raw)
		}
		vals = append(vals, s)
	}
	if len(names) > 0 {
		if len(names) != len(vals) {
			return nil, nil, errors.New("enumNames and enum differ in length")
		}
		titles = names
	}
	for _, c := range consts {
		var s string
		if json.Unmarshal(c.Const, &s) != nil {
			return nil, nil, fmt.Errorf("const %s is not a string", c.Const)
		}
		vals = append(vals, s)
		titles = append(titles, c.Title)
	}
	return vals, titles, nil
}

// Validate checks an accepted answer against the form and returns the
// content to send: values coerced to their JSON types (a form posts "42"
// for a number), defaults applied to fields left out. Every problem is
// reported, each naming its field.
func (f *Form) Validate(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(f.Fields))
	var probs []FieldProblem
	known := make(map[string]bool, len(f.Fields))
	for _, fd := range f.Fields {
		known[fd.Name] = true
		v, ok := content[fd.Name]
		if !ok || v == nil {
			switch {
			case fd.Default != nil:
				out[fd.Name] = fd.Default
			case fd.Required:
				probs = append(probs, FieldProblem{fd.Name, "is required"})
			}
			continue
		}
		cv, prob := fd.coerce(v)
		if prob != "" {
			probs = append(probs, FieldProblem{fd.Name, prob})
			continue
		}
		out[fd.Name] = cv
	}
	var unknown []string
	for k := range content {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		probs = append(probs, FieldProblem{k, fmt.Sprintf("is not a field of this form (fields: %s)", f.names())})
	}
	if len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	return out, nil
}

func (f *Form) names() string {
	if len(f.Fields) == 0 {
		return "none"
	}
	n := make([]string, len(f.Fields))
	for i, fd := range f.Fields {
		n[i] = fd.Name
	}
	return strings.Join(n, ", ")
}

// coerce converts v to the field's JSON type and checks its constraints;
// it returns a problem description instead of an error so that callers can
// collect all of them.
func (fd Field) coerce(v any) (any, string) {
	switch fd.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Sprintf("want a string, got %s", describe(v))
		}
		return s, fd.checkString(s)
	case TypeNumber, TypeInteger:
		n, ok := toNumber(v)
		if !ok {
			if fd.Type == TypeInteger {
				return nil, fmt.Sprintf("want an integer, got %s", describe(v))
			}
			return nil, fmt.Sprintf("want a number, got %s", describe(v))
		}
		if fd.Type == TypeInteger && n != math.Trunc(n) {
			return nil, fmt.Sprintf("want an integer, got %s", describe(v))
		}
		if fd.Minimum != nil && n < *fd.Minimum {
			return nil, fmt.Sprintf("must be at least %s", fmtNum(*fd.Minimum))
		}
		if fd.Maximum != nil && n > *fd.Maximum {
			return nil, fmt.Sprintf("must be at most %s", fmtNum(*fd.Maximum))
		}
		// float64 is what encoding/json produces, so the SDK's own schema
		// check sees the same value a JSON answer would give it.
		return n, ""
	case TypeBoolean:
		switch b := v.(type) {
		case bool:
			return b, ""
		case string:
			if p, err := strconv.ParseBool(strings.TrimSpace(b)); err == nil {
				return p, ""
			}
		}
		return nil, fmt.Sprintf("want true or false, got %s", describe(v))
	case TypeMultiSelect:
		var items []string
		switch a := v.(type) {
		case []string:
			items = a
		case []any:
			for _, x := range a {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Sprintf("want a list of strings, got an element %s", describe(x))
				}
				items = append(items, s)
			}
		default:
			return nil, fmt.Sprintf("want a list of choices, got %s", describe(v))
		}
		for _, s := range items {
			if !slices.Contains(fd.Enum, s) {
				return nil, fmt.Sprintf("%q is not one of %s", s, quoteList(fd.Enum))
			}
		}
		if fd.MinItems != nil && len(items) < *fd.MinItems {
			return nil, fmt.Sprintf("choose at least %d", *fd.MinItems)
		}
		if fd.MaxItems != nil && len(items) > *fd.MaxItems {
			return nil, fmt.Sprintf("choose at most %d", *fd.MaxItems)
		}
		out := make([]any, len(items))
		for i, s := range items {
			out[i] = s
		}
		return out, ""
	}
	return nil, fmt.Sprintf("unsupported field type %q", fd.Type)
}

func (fd Field) checkString(s string) string {
	if len(fd.Enum) > 0 && !slices.Contains(fd.Enum, s) {
		return fmt.Sprintf("%q is not one of %s", s, quoteList(fd.Enum))
	}
	n := utf8.RuneCountInString(s)
	if fd.MinLength != nil && n < *fd.MinLength {
		return fmt.Sprintf("must be at least %d characters long", *fd.MinLength)
	}
	if fd.MaxLength != nil && n > *fd.MaxLength {
		return fmt.Sprintf("must be at most %d characters long", *fd.MaxLength)
	}
	switch fd.Format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return fmt.Sprintf("%q is not an email address", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Sprintf("%q is not an absolute URI", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Sprintf("%q is not a date (YYYY-MM-DD)", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Sprintf("%q is not a date-time (RFC 3339, e.g. 2026-01-02T15:04:05Z)", s)
		}
	}
	return ""
}

func toNumber(v any) (float64, bool) {
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case float32:
		n = float64(x)
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case int32:
		n = float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, false
		}
		n = f
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		n = f
	default:
		return 0, false
	}
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, false
	}
	return n, true
}

func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
