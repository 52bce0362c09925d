package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const askSchema = `{"type":"object","properties":{"name":{"type":"string","description":"Your name"},"age":{"type":"integer","description":"Your age","default":42}},"required":["name"]}`

func TestParseForm(t *testing.T) {
	f, err := ParseForm(json.RawMessage(askSchema))
	if err != nil {
		t.Fatal(err)
	}
	// The schema's own order (name before age), not the alphabet's.
	want := []Field{
		{Name: "name", Description: "Your name", Type: TypeString, Required: true},
		{Name: "age", Description: "Your age", Type: TypeInteger, Default: float64(42)},
	}
	if !reflect.DeepEqual(f.Fields, want) {
		t.Fatalf("fields = %+v", f.Fields)
	}
	for _, c := range []struct{ schema, problem string }{
		{`{"type":"array"}`, "want object"},
		{`{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"string"}}}}}`, "nested"},
		{`{"type":"object","properties":{"p":{"type":"null"}}}`, "not allowed"},
		{`{"type":"object","properties":{"p":{}}}`, "no type"},
		{`{"type":"object","properties":{"p":{"type":"integer","enum":["a"]}}}`, "only string enums"},
		{`{"type":"object","properties":{"p":{"type":"array","items":{"type":"string"}}}}`, "multi-select"},
		{`{"type":"object","properties":{"p":{"type":"integer","default":"x"}}}`, "default"},
		{`{"type":"object","properties":{"p":{"type":["string","null"]}}}`, "single type"},
	} {
		if _, err := ParseForm(json.RawMessage(c.schema)); err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("ParseForm(%s) = %v, want an error about %q", c.schema, err, c.problem)
		}
	}
	if f, err := ParseForm(nil); err != nil || len(f.Fields) != 0 {
		t.Errorf("empty schema: %+v, %v", f, err)
	}
}

// Issue #8 item 16: fields keep the order of the schema's properties,
// whatever the alphabet says, and hostile shapes are bounded.
func TestParseFormKeepsSchemaOrder(t *testing.T) {
	schema := `{"type":"object","properties":{
		"zip":{"type":"string"},
		"name":{"type":"string","description":"{\"age\":1}"},
		"age":{"type":"integer"},
		"Ärger":{"type":"boolean"},
		"b":{"type":"array","items":{"enum":["x"]}},
		"a":{"type":"number"}},"required":["age"]}`
	f, err := ParseForm(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range f.Fields {
		names = append(names, fd.Name)
	}
	if want := []string{"zip", "name", "age", "Ärger", "b", "a"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("fields %v, want the schema's order %v", names, want)
	}
	if !f.Fields[2].Required || f.Fields[1].Required {
		t.Errorf("required marks moved with the order: %+v", f.Fields)
	}
	if f, err := ParseForm(json.RawMessage(`{"type":"object","properties":null}`)); err != nil || len(f.Fields) != 0 {
		t.Errorf("null properties: %+v, %v", f, err)
	}

	many := `{"type":"object","properties":{`
	for i := range DefaultLimits.MaxFields + 1 {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`"f%d":{"type":"string"}`, i)
	}
	many += `}}`
	for _, c := range []struct{ schema, problem string }{
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"a":{"type":"integer"}}}`, `"a" appears twice`},
		{`{"type":"object","properties":["a"]}`, "must be an object"},
		{`{"type":"object","properties":"a"}`, "must be an object"},
		{many, fmt.Sprintf("more than %d properties, over the limit MaxFields = %d", DefaultLimits.MaxFields, DefaultLimits.MaxFields)},
		{`{"type":"object","description":"` + strings.Repeat("x", DefaultLimits.MaxSchemaBytes) + `"}`, "over the limit MaxSchemaBytes"},
	} {
		if _, err := ParseForm(json.RawMessage(c.schema)); err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("ParseForm(%.80s) = %v, want an error about %q", c.schema, err, c.problem)
		}
	}
}

func TestFormValidate(t *testing.T) {
	schema := `{"type":"object","properties":{
		"name":{"type":"string","minLength":2,"maxLength":5},
		"age":{"type":"integer","minimum":0,"maximum":150,"default":42},
		"score":{"type":"number"},
		"ok":{"type":"boolean"},
		"color":{"type":"string","enum":["red","green"],"enumNames":["Red","Green"]},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":2},
		"mail":{"type":"string","format":"email"},
		"site":{"type":"string","format":"uri"},
		"day":{"type":"string","format":"date"},
		"at":{"type":"string","format":"date-time"}},
		"required":["name"]}`
	f, err := ParseForm(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		content map[string]any
		want    map[string]any
		errs    []string
	}{
		{"minimal, default applied", map[string]any{"name": "Ada"}, map[string]any{"name": "Ada", "age": float64(42)}, nil},
		{"coercions", map[string]any{"name": "Ada", "age": "7", "score": json.Number("1.5"), "ok": "true", "tags": []string{"a", "c"}},
			map[string]any{"name": "Ada", "age": float64(7), "score": 1.5, "ok": true, "tags": []any{"a", "c"}}, nil},
		{"null is missing", map[string]any{"name": "Ada", "age": nil}, map[string]any{"name": "Ada", "age": float64(42)}, nil},
		{"enums", map[string]any{"name": "Ada", "color": "red", "size": "l"}, map[string]any{"name": "Ada", "age": float64(42), "color": "red", "size": "l"}, nil},
		{"formats", map[string]any{"name": "Ada", "mail": "a@b.example", "site": "https://x.example/", "day": "2026-01-02", "at": "2026-01-02T03:04:05Z"},
			map[string]any{"name": "Ada", "age": float64(42), "mail": "a@b.example", "site": "https://x.example/", "day": "2026-01-02", "at": "2026-01-02T03:04:05Z"}, nil},
		{"required", map[string]any{}, nil, []string{`"name": is required`}},
		{"types", map[string]any{"name": 1, "age": 1.5, "score": "x", "ok": 3}, nil,
			[]string{`"name": want a string, got 1`, `"age": want an integer, got 1.5`, `"score": want a number, got "x"`, `"ok": want true or false, got 3`}},
		{"bounds", map[string]any{"name": "A", "age": 200}, nil, []string{`"name": must be at least 2 characters`, `"age": must be at most 150`}},
		{"long", map[string]any{"name": "Adalbert"}, nil, []string{"at most 5 characters"}},
		{"enum", map[string]any{"name": "Ada", "color": "blue", "size": "m"}, nil, []string{`"blue" is not one of ["red", "green"]`, `"m" is not one of ["s", "l"]`}},
		{"multi", map[string]any{"name": "Ada", "tags": []any{"a", "b", "c"}}, nil, []string{"choose at most 2"}},
		{"multi value", map[string]any{"name": "Ada", "tags": []any{"z"}}, nil, []string{`"z" is not one of`}},
		{"formats bad", map[string]any{"name": "Ada", "mail": "nope", "site": "/rel", "day": "2.1.2026", "at": "today"}, nil,
			[]string{"not an email address", "not an absolute URI", "not a date", "not a date-time"}},
		{"unknown", map[string]any{"name": "Ada", "extra": 1}, nil, []string{`"extra": is not a field of this form`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.Validate(c.content)
			if len(c.errs) == 0 {
				if err != nil || !reflect.DeepEqual(got, c.want) {
					t.Fatalf("Validate = %#v, %v; want %#v", got, err, c.want)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidAnswer) {
				t.Fatalf("Validate = %v, want a ValidationError", err)
			}
			if len(ve.Problems) != len(c.errs) {
				t.Errorf("%d problems, want %d: %v", len(ve.Problems), len(c.errs), err)
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// ParseForm reads a requested schema within DefaultLimits; see
// [Limits.ParseForm].
func ParseForm(schema json.RawMessage) (*Form, error) { return DefaultLimits.ParseForm(schema) }
