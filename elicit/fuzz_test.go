package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// sdkCheck does what go-sdk does with an accepted answer before the server
// gets it (mcp/client.go, Client.elicit; the server repeats it in
// ServerSession.Elicit): the schema, as decoded from the wire and
// re-encoded, is read as a jsonschema.Schema and resolved, the content is
// validated, and the schema's defaults are applied. A non-nil error is
// what the server would get instead of the answer. A nil content only
// checks the schema. A schema go-sdk cannot decode passes: such a question
// is never handed to Cards.
func sdkCheck(schema []byte, content map[string]any) error {
	var wire any
	if err := json.Unmarshal(schema, &wire); err != nil {
		// go-sdk cannot decode the request (a number out of range in a
		// member the form ignores, say), so the question never reaches
		// Cards: nothing can be accepted and then fail.
		return nil
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return err
	}
	var s *jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if s == nil {
		return nil
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	if content == nil {
		return nil
	}
	if err := r.Validate(content); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	c := maps.Clone(content)
	if err := r.ApplyDefaults(&c); err != nil {
		return fmt.Errorf("defaults: %w", err)
	}
	return nil
}

// hasSchema tells a schema from none (empty, blank or null: an empty
// form, which go-sdk does not validate against).
func hasSchema(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && string(t) != "null"
}

// fuzzSchemas seed both fuzz targets: every field type and enum form,
// and the shapes that were refused or mishandled before issue #10.
var fuzzSchemas = []string{
	askSchema,
	`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"boolean"}}}`,
	`{"properties":{"a":{"type":"string"},"a":{"type":"string"}}}`,
	`{"properties":{"x":{"type":"string","enum":["1","2"]}},"required":["x"]}`,
	`{"properties":{`,
	`{"type":"object","properties":{"name":{"type":"string"}},"required":["name","nickname"]}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":5,"format":"email","default":"a@b.c"}}}`,
	`{"type":"object","properties":{"n":{"type":"number","minimum":-1,"maximum":1e3},"i":{"type":"integer","minimum":0.5,"maximum":9,"default":3}},"required":["n"]}`,
	`{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}},"required":["e"]}`,
	`{"type":"object","properties":{"e":{"enum":["a","b"],"enumNames":["A","B"],"default":"a"}}}`,
	`{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1,"maxItems":2,"uniqueItems":true}},"required":["m"]}`,
	`{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"},{"const":"y","title":"Y"}]},"default":["y"]}}}`,
	`{"type":"object","properties":{"d":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uri"},"b":{"type":"boolean","default":true}}}`,
	`{"type":"object","properties":{"s":{"type":"string","pattern":"^[0-9]+$"}}}`,
	`{"type":"object","properties":{"s":{"type":"string","MaxLength":2,"x-order":1}}}`,
	`{"type":"object","properties":{"s":{"type":"string","enum":[]}}}`,
	`{"type":"object","additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#","properties":{"s":{"type":"string","title":"S","description":"D"}}}`,
	`{"type":"object","properties":{"\u00e4":{"type":"string"},"a\"b":{"type":"string"}},"required":["\u00e4"]}`,
	`{"type":"object","properties":{"n":{"type":"integer","maxLength":1.0,"minimum":1e308}}}`,
	`{"type":"object","properties":{"s":{"type":"string","default":null}},"required":["s"]}`,
	`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"x-ext":{"$ref":"#/nowhere"}}`,
	conformanceDefaultsSchema,
	``,
	`null`,
}

// FuzzParseForm: any schema either parses into a form that follows the
// schema's properties one for one, within the default limits, whose
// defaults keep their fields' rules and whose schema go-sdk can use; or
// it is refused. Never a panic.
func FuzzParseForm(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		form, err := ParseForm(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) && !errors.Is(err, ErrOverLimit) {
				t.Fatalf("refusal %v wraps neither ErrInvalidSchema nor ErrOverLimit", err)
			}
			return
		}
		if len(form.Fields) > DefaultLimits.MaxFields {
			t.Fatalf("%d fields", len(form.Fields))
		}
		seen := map[string]bool{}
		for _, fd := range form.Fields {
			if seen[fd.Name] {
				t.Fatalf("field %q twice", fd.Name)
			}
			seen[fd.Name] = true
			switch fd.Type {
			case TypeString, TypeNumber, TypeInteger, TypeBoolean:
			case TypeMultiSelect:
				if len(fd.Enum) == 0 {
					t.Fatalf("multi-select %q without choices", fd.Name)
				}
			default:
				t.Fatalf("field %q of type %q", fd.Name, fd.Type)
			}
			if len(fd.Enum) > DefaultLimits.MaxEnumValues || (fd.EnumTitles != nil && len(fd.EnumTitles) != len(fd.Enum)) {
				t.Fatalf("field %q: %d choices, %d titles", fd.Name, len(fd.Enum), len(fd.EnumTitles))
			}
			if fd.Default != nil {
				if _, prob := fd.coerce(fd.Default); prob != "" {
					t.Fatalf("field %q: default %v breaks its rules: %s", fd.Name, fd.Default, prob)
				}
			}
		}
		if hasSchema(data) {
			if err := sdkCheck(data, nil); err != nil {
				t.Fatalf("accepted a schema go-sdk cannot use: %v", err)
			}
		}
		// When every required field has a default, the empty answer is
		// complete, and the server must get it.
		if out, err := form.Validate(map[string]any{}); err == nil && hasSchema(data) {
			if err := sdkCheck(data, out); err != nil {
				t.Fatalf("the defaults %v were accepted, but the server would get: %v", out, err)
			}
		}
	})
}

// fuzzAnswers seed FuzzValidate's content.
var fuzzAnswers = []string{
	`{}`,
	`{"name":"Ada"}`,
	`{"name":"Ada","age":"7"}`,
	`{"name":"Ada","age":4.5}`,
	`{"name":7,"extra":true}`,
	`{"x":"1"}`,
	`{"s":"a@b.example","n":1,"i":"3"}`,
	`{"e":"a","m":["x","y"]}`,
	`{"m":["x","x"]}`,
	`{"m":"x"}`,
	`{"d":"2026-01-02T03:04:05Z","u":"https://x.example/","b":"false"}`,
	`{"n":"NaN","i":1e400}`,
	`{"\u00e4":"x","a\"b":null}`,
	`[]`,
	`{"s":null}`,
}

// FuzzValidate: any answer to any form is either refused with a
// *ValidationError naming at least one problem, or accepted as content
// that holds only the form's fields, every required one, each of its
// field's JSON type and rules — content go-sdk passes on to the server
// (never "accepted" on the card and failed on the wire), and that
// validates again to itself. Never a panic.
func FuzzValidate(f *testing.F) {
	for i, s := range fuzzSchemas {
		for j, a := range fuzzAnswers {
			if (i+j)%3 == 0 || j < 2 {
				f.Add([]byte(s), []byte(a))
			}
		}
	}
	f.Fuzz(func(t *testing.T, schema, answer []byte) {
		form, err := ParseForm(schema)
		if err != nil {
			return
		}
		// The answer as JSON, and an answer made from the form's own
		// choices, bounds and defaults, steered by the same bytes: random
		// JSON rarely fits a form, and accepted answers are what must
		// reach the server.
		var content map[string]any
		if json.Unmarshal(answer, &content) == nil {
			checkAnswer(t, schema, form, content)
		}
		checkAnswer(t, schema, form, pick(form, answer))
	})
}

// checkAnswer validates content against form (parsed from schema) and
// checks what FuzzValidate promises of the outcome.
func checkAnswer(t *testing.T, schema []byte, form *Form, content map[string]any) {
	t.Helper()
	out, err := form.Validate(content)
	if err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) == 0 || !errors.Is(err, ErrInvalidAnswer) {
			t.Fatalf("refusal %v is not a ValidationError with problems", err)
		}
		return
	}
	fields := map[string]Field{}
	for _, fd := range form.Fields {
		fields[fd.Name] = fd
		if _, ok := out[fd.Name]; fd.Required && !ok {
			t.Fatalf("required field %q missing from %v", fd.Name, out)
		}
	}
	for k, v := range out {
		fd, ok := fields[k]
		if !ok {
			t.Fatalf("accepted content has %q, not a field", k)
		}
		if prob := typeProblem(fd, v); prob != "" {
			t.Fatalf("field %q: accepted %#v: %s", k, v, prob)
		}
	}
	if hasSchema(schema) {
		if err := sdkCheck(schema, out); err != nil {
			t.Fatalf("accepted %v (from %v), but the server would get: %v", out, content, err)
		}
	}
	again, err := form.Validate(out)
	if err != nil || !reflect.DeepEqual(again, out) {
		t.Fatalf("accepted content %v validates again as %v, %v", out, again, err)
	}
}

// pick makes an answer a form could post, steered by b: each field left
// out, or given one of its choices (a multi-select some of them, maybe
// one twice), a bound or a number near it, a default, a boolean or its
// text, or a string of some length and format.
func pick(form *Form, b []byte) map[string]any {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		c := int(b[0])
		b = b[1:]
		return c
	}
	out := map[string]any{}
	for _, fd := range form.Fields {
		k := next()
		if k%5 == 0 {
			continue
		}
		if k%7 == 1 && fd.Default != nil {
			out[fd.Name] = fd.Default
			continue
		}
		switch fd.Type {
		case TypeString:
			if len(fd.Enum) > 0 {
				out[fd.Name] = fd.Enum[next()%len(fd.Enum)]
				break
			}
			samples := []string{"a@b.example", "https://x.example/p", "2026-01-02", "2026-01-02T03:04:05Z", "x"}
			s := samples[next()%len(samples)]
			for n := next() % 9; n > 0; n-- {
				s += "é"
			}
			out[fd.Name] = s
		case TypeNumber, TypeInteger:
			var candidates []any
			for _, p := range []*float64{fd.Minimum, fd.Maximum} {
				if p != nil {
					candidates = append(candidates, *p, math.Ceil(*p), math.Floor(*p), *p+0.5, fmtNum(*p))
				}
			}
			candidates = append(candidates, 0.0, 7.0, -1.5, "42", json.Number("3"))
			out[fd.Name] = candidates[next()%len(candidates)]
		case TypeBoolean:
			out[fd.Name] = []any{true, false, "true", " false"}[next()%4]
		case TypeMultiSelect:
			var l []any
			for _, e := range fd.Enum {
				if c := next(); c%2 == 0 {
					l = append(l, e)
					if c%6 == 0 {
						l = append(l, e)
					}
				}
			}
			out[fd.Name] = l
		}
	}
	return out
}

// typeProblem checks an accepted value's Go type (the one encoding/json
// gives its JSON type) and choices.
func typeProblem(fd Field, v any) string {
	switch fd.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return "not a string"
		}
		if len(fd.Enum) > 0 && !slices.Contains(fd.Enum, s) {
			return "not a choice"
		}
	case TypeNumber, TypeInteger:
		n, ok := v.(float64)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return "not a finite number"
		}
		if fd.Type == TypeInteger && n != math.Trunc(n) {
			return "not an integer"
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return "not a boolean"
		}
	case TypeMultiSelect:
		l, ok := v.([]any)
		if !ok {
			return "not a list"
		}
		seen := map[string]bool{}
		for _, x := range l {
			s, ok := x.(string)
			if !ok || !slices.Contains(fd.Enum, s) || seen[s] {
				return fmt.Sprintf("element %#v is not a new choice", x)
			}
			seen[s] = true
		}
	default:
		return "unknown field type"
	}
	return ""
}
