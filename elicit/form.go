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

// ErrInvalidSchema is wrapped by the errors of a requested schema that a
// form cannot show faithfully (a *LimitError wraps ErrOverLimit instead).
var ErrInvalidSchema = errors.New("the requested schema cannot be shown as a form")

// schemaError wraps a refusal of the schema: the limit error as is, any
// other as ErrInvalidSchema.
func schemaError(err error) error {
	var le *LimitError
	if errors.As(err, &le) {
		return fmt.Errorf("requested schema: %w", err)
	}
	return fmt.Errorf("requested schema: %w: %w", err, ErrInvalidSchema)
}

// ParseForm reads a requested schema, within l (its zero fields taken from
// DefaultLimits). Fields come in the order the schema's "properties" object
// lists them.
//
// A card must never say "accepted" for an answer the server then never
// gets (go-sdk validates the answer against the schema before sending it
// and fails the request instead). So ParseForm refuses, with the reason,
// every schema whose rules the form does not check exactly: anything
// beyond flat primitive fields, single- and multi-select enums (MCP
// 2025-11-25, "Requested Schema"); JSON Schema keywords the form does not
// implement (pattern, const, allOf, $ref, ...), and their case variants,
// which the validator's JSON decoding still applies; and inconsistent
// schemas: a required property that is not defined, a name given twice,
// a default that breaks its own field's rules, bounds that exclude every
// value (min > max). Members that are no JSON Schema keyword (extensions
// such as "x-order") are ignored, as validators ignore them.
//
// A schema over l is refused with a *LimitError; its size and field count
// are checked before any field is parsed. The work is linear in the
// schema's size.
func (l Limits) ParseForm(schema json.RawMessage) (*Form, error) {
	l = l.withDefaults()
	if len(schema) > l.MaxSchemaBytes {
		return nil, schemaError(&LimitError{Limit: "MaxSchemaBytes", Max: l.MaxSchemaBytes, What: fmt.Sprintf("%d bytes", len(schema))})
	}
	if t := bytes.TrimSpace(schema); len(t) == 0 || string(t) == "null" {
		return &Form{}, nil
	}
	// Once, so that every part of the schema can then be split by a plain
	// scan (see members).
	if !json.Valid(schema) {
		var v any
		return nil, schemaError(fmt.Errorf("not JSON: %w", json.Unmarshal(schema, &v)))
	}
	f, err := l.parseForm(schema)
	if err != nil {
		return nil, schemaError(err)
	}
	return f, nil
}

func (l Limits) parseForm(schema json.RawMessage) (*Form, error) {
	root, err := members(schema, 0, "")
	if err != nil {
		return nil, err
	}
	var props, required json.RawMessage
	for _, m := range root {
		switch m.name {
		case "type":
			if s, err := jsonString(m.raw); err != nil || s != "object" {
				return nil, fmt.Errorf("type %s, want object", clip(m.raw))
			}
		case "properties":
			props = m.raw
		case "required":
			required = m.raw
		case "$schema":
			v, err := jsonString(m.raw)
			if err != nil {
				return nil, fmt.Errorf("$schema: %w", err)
			}
			if !dialects[v] {
				// go-sdk's validator would fail every answer.
				return nil, fmt.Errorf("$schema %q: answers can only be validated against draft-07 or 2020-12", v)
			}
		case "title":
			if err := l.text("title", m.raw, l.MaxTitle, "MaxTitle", nil); err != nil {
				return nil, err
			}
		case "description":
			if err := l.text("description", m.raw, l.MaxDescription, "MaxDescription", nil); err != nil {
				return nil, err
			}
		case "additionalProperties", "unevaluatedProperties":
			// The answer only ever holds the form's own fields, so a
			// boolean here changes nothing; a schema could hold a $ref
			// the validator fails to resolve.
			if _, err := jsonBool(m.raw); err != nil {
				return nil, fmt.Errorf("%s must be true or false in a form", m.name)
			}
		default:
			if err := other(m, "at the top of a form's schema"); err != nil {
				return nil, err
			}
		}
	}

	// Counted (and checked against MaxFields) before any field is parsed.
	var fields []member
	if !isNull(props) {
		if fields, err = members(props, l.MaxFields, "MaxFields"); err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
	}
	req, err := l.requiredSet(required, fields)
	if err != nil {
		return nil, err
	}
	f := &Form{Fields: make([]Field, 0, len(fields))}
	for _, p := range fields {
		if err := checkText(fmt.Sprintf("property name %.40q", p.name), p.name, l.MaxTitle, "MaxTitle"); err != nil {
			return nil, err
		}
		fd, err := l.parseField(p.name, p.raw)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", p.name, err)
		}
		fd.Required = req[p.name]
		f.Fields = append(f.Fields, fd)
	}
	return f, nil
}

// requiredSet reads "required": distinct names, each of a defined
// property. An undefined one would make every answer fail the server's
// validation after the person accepted.
func (l Limits) requiredSet(raw json.RawMessage, fields []member) (map[string]bool, error) {
	if isNull(raw) {
		return nil, nil
	}
	vals, err := jsonArray(raw)
	if err != nil {
		return nil, fmt.Errorf("required: %w", err)
	}
	if len(vals) > l.MaxFields {
		// Names must be distinct and defined (below), so a valid list is
		// no longer than the fields; refused before any name is decoded.
		return nil, &LimitError{Limit: "MaxFields", Max: l.MaxFields, What: fmt.Sprintf("required: %d names", len(vals))}
	}
	defined := make(map[string]bool, len(fields))
	for _, p := range fields {
		defined[p.name] = true
	}
	req := make(map[string]bool, len(vals))
	for _, v := range vals {
		name, err := jsonString(v)
		if err != nil {
			return nil, fmt.Errorf("required: %s is not a property name", clip(v))
		}
		switch {
		case req[name]:
			return nil, fmt.Errorf("required: %q is listed twice", name)
		case !defined[name]:
			return nil, fmt.Errorf("required: %q is not a defined property", name)
		}
		req[name] = true
	}
	return req, nil
}

// The keywords of one form field, by the field type they apply to.
var (
	stringKeywords = map[string]bool{"enum": true, "enumNames": true, "oneOf": true, "format": true, "minLength": true, "maxLength": true}
	numberKeywords = map[string]bool{"minimum": true, "maximum": true}
	arrayKeywords  = map[string]bool{"items": true, "minItems": true, "maxItems": true, "uniqueItems": true}
)

// dialects are the $schema values go-sdk's validator (jsonschema-go)
// validates answers against; "" is its default, 2020-12.
var dialects = map[string]bool{
	"": true,
	"http://json-schema.org/draft-07/schema#":      true,
	"https://json-schema.org/draft-07/schema#":     true,
	"https://json-schema.org/draft/2020-12/schema": true,
}

// formats are the string formats a form checks (MCP 2025-11-25).
var formats = map[string]bool{"email": true, "uri": true, "date": true, "date-time": true}

// prop is a form field's schema as read, before its type is known.
type prop struct {
	typ                  string
	title, desc, format  string
	enum, names, oneOf   json.RawMessage
	items, def           json.RawMessage
	minLen, maxLen       *int
	minItems, maxItems   *int
	minimum, maximum     *float64
	keywords             []string // type-specific keywords present, in order
	nested, typeNotAName bool
}

// parseField parses the schema of the form field name under l's limits.
//
// Long: one pass over the field's members collecting them into a prop,
// then the checks that need all of them at once (type against keywords,
// enum against type) and the Field built per type; the three steps share
// the one prop.
func (l Limits) parseField(name string, raw json.RawMessage) (Field, error) {
	ms, err := members(raw, 0, "")
	if err != nil {
		return Field{}, err
	}
	var p prop
	for _, m := range ms {
		var err error
		switch m.name {
		case "type":
			p.typ, err = jsonString(m.raw)
			p.typeNotAName = err != nil
			err = nil
		case "title":
			err = l.text("title", m.raw, l.MaxTitle, "MaxTitle", &p.title)
		case "description":
			err = l.text("description", m.raw, l.MaxDescription, "MaxDescription", &p.desc)
		case "default":
			p.def = m.raw
		case "properties":
			p.nested = true
		case "enum", "enumNames", "oneOf", "items", "format", "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "uniqueItems":
			p.keywords = append(p.keywords, m.name)
			err = p.set(m)
		default:
			err = other(m, "in a form field")
		}
		if err != nil {
			return Field{}, err
		}
	}
	switch {
	case p.nested:
		return Field{}, errors.New("nested objects are not allowed in a form")
	case p.typeNotAName:
		return Field{}, errors.New("type must be a single type name")
	}
	hasEnum := p.enum != nil || p.oneOf != nil
	if hasEnum {
		if p.typ != "" && p.typ != "string" {
			return Field{}, fmt.Errorf("enum of type %q; only string enums are allowed", p.typ)
		}
		p.typ = "string"
	}
	var allowed map[string]bool
	switch p.typ {
	case "string":
		allowed = stringKeywords
	case "number", "integer":
		allowed = numberKeywords
	case "boolean":
	case "array":
		allowed = arrayKeywords
	case "":
		return Field{}, errors.New("no type")
	default:
		return Field{}, fmt.Errorf("type %q is not allowed in a form", p.typ)
	}
	for _, k := range p.keywords {
		if !allowed[k] {
			return Field{}, fmt.Errorf("%s does not apply to a field of type %s", k, p.typ)
		}
	}
	fd := Field{Name: name, Title: p.title, Description: p.desc, Type: FieldType(p.typ), Format: p.format,
		MinLength: p.minLen, MaxLength: p.maxLen, Minimum: p.minimum, Maximum: p.maximum,
		MinItems: p.minItems, MaxItems: p.maxItems}
	switch fd.Type {
	case TypeString:
		err = l.stringField(&fd, p)
	case TypeNumber, TypeInteger:
		err = numberField(fd)
	case TypeMultiSelect:
		err = l.multiSelect(&fd, p)
	}
	if err != nil {
		return Field{}, err
	}
	if !isNull(p.def) {
		if fd.Default, err = fd.parseDefault(p.def); err != nil {
			return Field{}, err
		}
	}
	return fd, nil
}

// set stores one type-specific keyword of a field.
func (p *prop) set(m member) error {
	var err error
	switch m.name {
	case "enum":
		p.enum = m.raw
	case "enumNames":
		p.names = m.raw
	case "oneOf":
		p.oneOf = m.raw
	case "items":
		p.items = m.raw
	case "format":
		if p.format, err = jsonString(m.raw); err == nil && !formats[p.format] {
			err = fmt.Errorf("format %q is not supported in a form (only email, uri, date and date-time)", p.format)
		}
	case "minLength":
		p.minLen, err = count(m.raw)
	case "maxLength":
		p.maxLen, err = count(m.raw)
	case "minItems":
		p.minItems, err = count(m.raw)
	case "maxItems":
		p.maxItems, err = count(m.raw)
	case "minimum":
		p.minimum, err = number(m.raw)
	case "maximum":
		p.maximum, err = number(m.raw)
	case "uniqueItems":
		// Either way: a multi-select answer never names a choice twice.
		_, err = jsonBool(m.raw)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return nil
}

func (l Limits) stringField(fd *Field, p prop) error {
	if p.minLen != nil && p.maxLen != nil && *p.minLen > *p.maxLen {
		return fmt.Errorf("minLength %d is more than maxLength %d", *p.minLen, *p.maxLen)
	}
	switch {
	case p.enum != nil && p.oneOf != nil:
		// The validator would require both, the form offers either.
		return errors.New("enum and oneOf together; a form offers one list of choices")
	case p.names != nil && p.enum == nil:
		return errors.New("enumNames without enum")
	case p.enum != nil:
		var err error
		if fd.Enum, fd.EnumTitles, err = l.plainEnum("enum", p.enum, p.names); err != nil {
			return err
		}
	case p.oneOf != nil:
		var err error
		if fd.Enum, fd.EnumTitles, err = l.titledEnum("oneOf", p.oneOf); err != nil {
			return err
		}
	}
	// A choice that breaks the field's own rules could be offered but
	// never accepted.
	free := *fd
	free.Enum = nil
	for _, v := range fd.Enum {
		if prob := free.checkString(v); prob != "" {
			return fmt.Errorf("choice %q: %s", v, prob)
		}
	}
	return nil
}

func numberField(fd Field) error {
	if fd.Minimum == nil || fd.Maximum == nil {
		return nil
	}
	lo, hi := *fd.Minimum, *fd.Maximum
	if lo > hi {
		return fmt.Errorf("minimum %s is more than maximum %s", fmtNum(lo), fmtNum(hi))
	}
	if fd.Type == TypeInteger && math.Ceil(lo) > math.Floor(hi) {
		return fmt.Errorf("no integer lies between minimum %s and maximum %s", fmtNum(lo), fmtNum(hi))
	}
	return nil
}

func (l Limits) multiSelect(fd *Field, p prop) error {
	if p.items == nil {
		return errors.New("array without items")
	}
	ms, err := members(p.items, 0, "")
	if err != nil {
		return fmt.Errorf("items: %w", err)
	}
	var enum, names, anyOf json.RawMessage
	for _, m := range ms {
		switch m.name {
		case "type":
			if s, err := jsonString(m.raw); err != nil || s != "string" {
				return fmt.Errorf("items: type %s; a multi-select's choices are strings", clip(m.raw))
			}
		case "enum":
			enum = m.raw
		case "enumNames":
			names = m.raw
		case "anyOf":
			anyOf = m.raw
		case "title":
			err = l.text("items: title", m.raw, l.MaxTitle, "MaxTitle", nil)
		case "description":
			err = l.text("items: description", m.raw, l.MaxDescription, "MaxDescription", nil)
		default:
			err = other(m, "in the items of a multi-select")
		}
		if err != nil {
			return err
		}
	}
	switch {
	case enum != nil && anyOf != nil:
		return errors.New("items: enum and anyOf together; a form offers one list of choices")
	case names != nil && enum == nil:
		return errors.New("items: enumNames without enum")
	case enum != nil:
		fd.Enum, fd.EnumTitles, err = l.plainEnum("items: enum", enum, names)
	case anyOf != nil:
		fd.Enum, fd.EnumTitles, err = l.titledEnum("items: anyOf", anyOf)
	default:
		return errors.New("array items must be an enum (multi-select)")
	}
	if err != nil {
		return err
	}
	switch {
	case fd.MinItems != nil && fd.MaxItems != nil && *fd.MinItems > *fd.MaxItems:
		return fmt.Errorf("minItems %d is more than maxItems %d", *fd.MinItems, *fd.MaxItems)
	case fd.MinItems != nil && *fd.MinItems > len(fd.Enum):
		return fmt.Errorf("minItems %d is more than the %d choices", *fd.MinItems, len(fd.Enum))
	}
	return nil
}

// plainEnum reads an enum of strings and its optional enumNames.
func (l Limits) plainEnum(what string, enum, names json.RawMessage) (vals, titles []string, err error) {
	raws, err := l.choices(what, enum)
	if err != nil {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(raws))
	vals = make([]string, len(raws))
	for i, raw := range raws {
		s, err := jsonString(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s value %s is not a string", what, clip(raw))
		}
		if err := l.choice(what, s, seen); err != nil {
			return nil, nil, err
		}
		vals[i] = s
	}
	if names == nil {
		return vals, nil, nil
	}
	nraws, err := jsonArray(names)
	if err != nil {
		return nil, nil, fmt.Errorf("enumNames: %w", err)
	}
	if len(nraws) != len(vals) {
		return nil, nil, errors.New("enumNames and enum differ in length")
	}
	titles = make([]string, len(nraws))
	for i, raw := range nraws {
		if titles[i], err = jsonString(raw); err != nil {
			return nil, nil, fmt.Errorf("enumNames: %s is not a string", clip(raw))
		}
		if err := checkText("enumNames: title", titles[i], l.MaxTitle, "MaxTitle"); err != nil {
			return nil, nil, err
		}
	}
	return vals, titles, nil
}

// titledEnum reads the [{const, title}] list of a oneOf or anyOf.
func (l Limits) titledEnum(what string, list json.RawMessage) (vals, titles []string, err error) {
	raws, err := l.choices(what, list)
	if err != nil {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(raws))
	vals, titles = make([]string, len(raws)), make([]string, len(raws))
	for i, raw := range raws {
		ms, err := members(raw, 0, "")
		if err != nil {
			return nil, nil, fmt.Errorf("%s choice %d: %w", what, i, err)
		}
		hasConst := false
		for _, m := range ms {
			switch m.name {
			case "const":
				if vals[i], err = jsonString(m.raw); err != nil {
					return nil, nil, fmt.Errorf("const %s is not a string", clip(m.raw))
				}
				hasConst = true
			case "title":
				err = l.text(what+": title", m.raw, l.MaxTitle, "MaxTitle", &titles[i])
			case "description":
				err = l.text(what+": description", m.raw, l.MaxDescription, "MaxDescription", nil)
			default:
				err = other(m, "in a choice (only const and title)")
			}
			if err != nil {
				return nil, nil, err
			}
		}
		if !hasConst {
			return nil, nil, fmt.Errorf("%s choice %d has no const", what, i)
		}
		if err := l.choice(what, vals[i], seen); err != nil {
			return nil, nil, err
		}
	}
	return vals, titles, nil
}

// choices reads a list of choices: not empty (the validator would refuse
// every answer), and counted before any is read.
func (l Limits) choices(what string, raw json.RawMessage) ([]json.RawMessage, error) {
	raws, err := jsonArray(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", what, err)
	case len(raws) == 0:
		return nil, fmt.Errorf("%s has no choices", what)
	case len(raws) > l.MaxEnumValues:
		return nil, &LimitError{Limit: "MaxEnumValues", Max: l.MaxEnumValues, What: fmt.Sprintf("%s: %d choices", what, len(raws))}
	}
	return raws, nil
}

// choice checks one choice's value: within MaxTitle, and given once (a
// oneOf matching twice fails validation; a list showing one choice twice
// is a mistake).
func (l Limits) choice(what, v string, seen map[string]bool) error {
	if err := checkText(what+": value", v, l.MaxTitle, "MaxTitle"); err != nil {
		return err
	}
	if seen[v] {
		return fmt.Errorf("%s: choice %q is listed twice", what, v)
	}
	seen[v] = true
	return nil
}

// parseDefault reads a field's default: of the field's own JSON type (a
// form would coerce "42" for a number, a schema validator does not), and
// within the field's rules.
func (fd Field) parseDefault(raw json.RawMessage) (any, error) {
	kind := jsonKind(raw)
	ok := false
	switch fd.Type {
	case TypeString:
		ok = kind == '"'
	case TypeNumber, TypeInteger:
		ok = kind == '0'
	case TypeBoolean:
		ok = kind == 't'
	case TypeMultiSelect:
		ok = kind == '['
	}
	if !ok {
		return nil, fmt.Errorf("default %s is not of type %s", clip(raw), fd.Type)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("default: %w", err)
	}
	cv, prob := fd.coerce(v)
	if prob != "" {
		return nil, fmt.Errorf("default: %s", prob)
	}
	return cv, nil
}

// text reads a string member of at most max characters into dst (when
// not nil).
func (l Limits) text(what string, raw json.RawMessage, max int, limit string, dst *string) error {
	s, err := jsonString(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkText(what, s, max, limit); err != nil {
		return err
	}
	if dst != nil {
		*dst = s
	}
	return nil
}

// schemaKeywords are the keywords the answer's validator acts on: every
// member name of go-sdk's schema type (jsonschema-go's Schema, including
// its draft-07 forms), plus "enumNames", which go-sdk checks itself. A
// keyword a level does not handle is refused there (see [other]).
var schemaKeywords = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"$id", "$schema", "$ref", "$comment", "$defs", "definitions", "$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary",
		"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
		"type", "enum", "const", "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
		"minLength", "maxLength", "pattern",
		"prefixItems", "items", "minItems", "maxItems", "additionalItems", "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems",
		"minProperties", "maxProperties", "required", "dependentRequired", "dependencies", "properties", "patternProperties",
		"additionalProperties", "propertyNames", "unevaluatedProperties",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
		"contentEncoding", "contentMediaType", "contentSchema", "format", "enumNames",
	} {
		m[fold(k)] = k
	}
	return m
}()

// fold maps every spelling that encoding/json's case-insensitive member
// matching (bytes.EqualFold) takes for one name to the same string; it
// may also merge a few more, which only makes the check stricter.
func fold(s string) string { return strings.ToLower(strings.ToUpper(s)) }

// other handles a member no case of its level took: an annotation every
// level may carry, or an extension (ignored), or else a keyword the form
// does not implement at this level, which is refused. A case variant of a
// keyword is refused too: the validator decodes schemas with
// encoding/json, which matches member names case-insensitively, so
// "Pattern" would still constrain the answer.
func other(m member, where string) error {
	switch m.name {
	case "$comment":
		_, err := jsonString(m.raw)
		return annotationErr(m.name, err)
	case "deprecated", "readOnly", "writeOnly":
		_, err := jsonBool(m.raw)
		return annotationErr(m.name, err)
	case "examples":
		_, err := jsonArray(m.raw)
		return annotationErr(m.name, err)
	}
	k, ok := schemaKeywords[fold(m.name)]
	switch {
	case !ok:
		return nil
	case k != m.name:
		return fmt.Errorf("%q is the JSON Schema keyword %q spelled in another case, which validators still apply; not supported in a form", m.name, k)
	default:
		return fmt.Errorf("keyword %q is not supported %s", m.name, where)
	}
}

func annotationErr(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

type member struct {
	name string
	raw  json.RawMessage
}

// members lists the members of a JSON object in document order, which a
// Go map would lose, refusing a name given twice (decoders disagree on
// which one wins). With max > 0, more than max members is a *LimitError
// named limit, returned as soon as member max+1 starts: before its value,
// or any later one, is looked at.
//
// obj must be valid JSON (ParseForm checks the whole schema once, and
// every value handed on is a part of it): the members are found by a
// single scan over the bytes, and the values are sub-slices of obj, so
// reading a schema is linear in its size.
func members(obj json.RawMessage, max int, limit string) ([]member, error) {
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return nil, errors.New("must be an object")
	}
	var out []member
	var seen map[string]bool
	for i = skipSpace(obj, i+1); obj[i] != '}'; {
		if max > 0 && len(out) == max {
			return nil, &LimitError{Limit: limit, Max: max, What: fmt.Sprintf("more than %d properties", max)}
		}
		end := valueEnd(obj, i)
		name, err := jsonString(obj[i:end])
		if err != nil {
			return nil, err
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		if seen[name] {
			return nil, fmt.Errorf("%q appears twice", name)
		}
		seen[name] = true
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		end = valueEnd(obj, i)
		out = append(out, member{name, obj[i:end:end]})
		if i = skipSpace(obj, end); obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if skipSpace(obj, i+1) != len(obj) {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// elements lists the elements of a JSON array; like members, arr must be
// valid JSON.
func elements(arr json.RawMessage) ([]json.RawMessage, bool) {
	i := skipSpace(arr, 0)
	if i == len(arr) || arr[i] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	for i = skipSpace(arr, i+1); arr[i] != ']'; {
		end := valueEnd(arr, i)
		out = append(out, arr[i:end:end])
		if i = skipSpace(arr, end); arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return out, skipSpace(arr, i+1) == len(arr)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// stringEnd returns the index after the closing quote of the JSON string
// starting at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// jsonKind is the first byte of a JSON value's kind: '"', '{', '[', 't'
// (true or false), 'n' or '0' (a number).
func jsonKind(raw json.RawMessage) byte {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	switch c := t[0]; c {
	case '"', '{', '[', 'n':
		return c
	case 't', 'f':
		return 't'
	}
	return '0'
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || jsonKind(raw) == 'n' }

func jsonString(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if jsonKind(raw) != '"' {
		return "", fmt.Errorf("%s is not a string", clip(raw))
	}
	// The common case, without escapes or bytes encoding/json would
	// replace (invalid UTF-8), needs no decoding.
	if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s is not a string", clip(raw))
	}
	return s, nil
}

func jsonBool(raw json.RawMessage) (bool, error) {
	var b bool
	if jsonKind(raw) != 't' || json.Unmarshal(raw, &b) != nil {
		return false, fmt.Errorf("%s is not true or false", clip(raw))
	}
	return b, nil
}

func jsonArray(raw json.RawMessage) ([]json.RawMessage, error) {
	a, ok := elements(raw)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", clip(raw))
	}
	return a, nil
}

// count reads a non-negative integer keyword the way the validator does
// (jsonschema-go: 3.0 is 3; at most 2^31-1).
func count(raw json.RawMessage) (*int, error) {
	if jsonKind(raw) != '0' {
		return nil, fmt.Errorf("%s is not a number", clip(raw))
	}
	var i int64
	if bytes.ContainsRune(raw, '.') {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || f < math.MinInt64 || f > math.MaxInt64 {
			return nil, fmt.Errorf("%s is not an integer", clip(raw))
		}
		i = int64(f)
	} else if json.Unmarshal(raw, &i) != nil {
		return nil, fmt.Errorf("%s is not an integer", clip(raw))
	}
	if i < 0 || i > math.MaxInt32 {
		return nil, fmt.Errorf("%d is out of range (0 to %d)", i, math.MaxInt32)
	}
	n := int(i)
	return &n, nil
}

func number(raw json.RawMessage) (*float64, error) {
	var f float64
	if jsonKind(raw) != '0' || json.Unmarshal(raw, &f) != nil {
		return nil, fmt.Errorf("%s is not a number", clip(raw))
	}
	return &f, nil
}

// clip shortens a raw value quoted in an error.
func clip(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}

// Validate checks an accepted answer against the form and returns the
// content to send: values coerced to their JSON types (a form posts "42"
// for a number), defaults applied to fields left out. Every problem is
// reported, each naming its field. A multi-select answer naming a choice
// twice is refused. The work is linear in the size of the form and the
// answer.
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
	if len(unknown) > 0 {
		slices.Sort(unknown)
		// One text for all: listing the fields for each unknown name
		// would cost fields × names.
		prob := fmt.Sprintf("is not a field of this form (fields: %s)", f.names())
		for _, k := range unknown {
			probs = append(probs, FieldProblem{k, prob})
		}
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
//
// Long: one switch over the four field types, each case converting and
// checking its own constraints; the cases share nothing but the switch,
// and side by side they show every answer a form accepts.
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
		// A set, so that a long answer against many choices stays
		// linear; a choice named twice is refused, as a person picking
		// from a list cannot do that and the server may not expect it.
		choices := make(map[string]bool, len(fd.Enum))
		for _, e := range fd.Enum {
			choices[e] = true
		}
		picked := make(map[string]bool, len(items))
		for _, s := range items {
			switch {
			case !choices[s]:
				return nil, fmt.Sprintf("%q is not one of %s", s, quoteList(fd.Enum))
			case picked[s]:
				return nil, fmt.Sprintf("%q is chosen twice", s)
			}
			picked[s] = true
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
