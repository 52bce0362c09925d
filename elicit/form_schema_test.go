package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// props wraps property schemas into a requested schema.
func props(p string) string { return `{"type":"object","properties":{` + p + `}}` }

// Issue #10 item 4: every form type and enum form that forms supported
// before stays supported, with the annotations and extensions real
// servers send.
func TestParseFormAcceptsSupportedShapes(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		want         Field
	}{
		{"string", props(`"s":{"type":"string","title":"S","description":"d","minLength":1,"maxLength":3,"default":"ab"}`),
			Field{Name: "s", Title: "S", Description: "d", Type: TypeString, MinLength: ptr(1), MaxLength: ptr(3), Default: "ab"}},
		{"formats", props(`"s":{"type":"string","format":"date","default":"2026-01-02"}`),
			Field{Name: "s", Type: TypeString, Format: "date", Default: "2026-01-02"}},
		{"number", props(`"n":{"type":"number","minimum":-1.5,"maximum":2,"default":0.5}`),
			Field{Name: "n", Type: TypeNumber, Minimum: ptr(-1.5), Maximum: ptr(2.0), Default: 0.5}},
		{"integer", props(`"n":{"type":"integer","minimum":0.5,"maximum":1.5,"default":1}`),
			Field{Name: "n", Type: TypeInteger, Minimum: ptr(0.5), Maximum: ptr(1.5), Default: float64(1)}},
		{"boolean", props(`"b":{"type":"boolean","default":false}`),
			Field{Name: "b", Type: TypeBoolean, Default: false}},
		{"enum without type", props(`"e":{"enum":["a","b"]}`),
			Field{Name: "e", Type: TypeString, Enum: []string{"a", "b"}}},
		{"enum with enumNames", props(`"e":{"type":"string","enum":["a","b"],"enumNames":["A","B"],"default":"b"}`),
			Field{Name: "e", Type: TypeString, Enum: []string{"a", "b"}, EnumTitles: []string{"A", "B"}, Default: "b"}},
		{"oneOf", props(`"e":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B","description":"bee"}]}`),
			Field{Name: "e", Type: TypeString, Enum: []string{"a", "b"}, EnumTitles: []string{"A", "B"}}},
		{"multi-select enum", props(`"m":{"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1,"maxItems":2,"uniqueItems":true,"default":["x"]}`),
			Field{Name: "m", Type: TypeMultiSelect, Enum: []string{"x", "y", "z"}, MinItems: ptr(1), MaxItems: ptr(2), Default: []any{"x"}}},
		{"multi-select anyOf", props(`"m":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"},{"const":"y","title":"Y"}]}}`),
			Field{Name: "m", Type: TypeMultiSelect, Enum: []string{"x", "y"}, EnumTitles: []string{"X", "Y"}}},
		{"multi-select enumNames", props(`"m":{"type":"array","items":{"enum":["x"],"enumNames":["X"]}}`),
			Field{Name: "m", Type: TypeMultiSelect, Enum: []string{"x"}, EnumTitles: []string{"X"}}},
		{"integral counts as decimals, as validators read them", props(`"s":{"type":"string","maxLength":3.0}`),
			Field{Name: "s", Type: TypeString, MaxLength: ptr(3)}},
		{"annotations and extensions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","title":"T","description":"D",
			"additionalProperties":false,"x-vendor":{"$ref":"#/nowhere"},"$comment":"c",
			"properties":{"s":{"type":"string","readOnly":false,"deprecated":true,"examples":["a"],"x-order":1,"$comment":"c"}}}`,
			Field{Name: "s", Type: TypeString}},
		{"null default is no default", props(`"s":{"type":"string","default":null}`), Field{Name: "s", Type: TypeString}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseForm(json.RawMessage(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Fields) != 1 || !reflect.DeepEqual(f.Fields[0], c.want) {
				t.Fatalf("fields %+v\nwant   %+v", f.Fields, c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The question of the MCP conformance suite's SEP-1034 scenario
// (elicitation-sep1034-client-defaults) must stay answerable.
const conformanceDefaultsSchema = `{"type":"object","properties":{
	"name":{"type":"string","description":"User name","default":"John Doe"},
	"age":{"type":"integer","description":"User age","default":30},
	"score":{"type":"number","description":"User score","default":95.5},
	"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
	"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`

func TestParseFormConformanceDefaults(t *testing.T) {
	f, err := ParseForm(json.RawMessage(conformanceDefaultsSchema))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Validate(map[string]any{})
	want := map[string]any{"name": "John Doe", "age": float64(30), "score": 95.5, "status": "active", "verified": true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("the empty answer = %v, %v; want the defaults %v", got, err, want)
	}
}

// Issue #10 item 4: a schema the form cannot check exactly is refused
// with its reason, never shown and then failed.
func TestParseFormRefusesInconsistentSchemas(t *testing.T) {
	for _, c := range []struct{ name, schema, reason string }{
		{"required names an undefined property", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`, `"b" is not a defined property`},
		{"required without properties", `{"type":"object","required":["a"]}`, `"a" is not a defined property`},
		{"required twice", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`, `"a" is listed twice`},
		{"required not names", `{"type":"object","properties":{"a":{"type":"string"}},"required":[1]}`, "not a property name"},
		{"required not a list", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`, "required"},
		{"top-level type", `{"type":"string"}`, "want object"},
		{"top-level type list", `{"type":["object"]}`, "want object"},
		{"not an object", `[]`, "must be an object"},
		{"trailing data", `{"type":"object"} {}`, "not JSON"},
		{"not JSON", `{"type":"object",}`, "not JSON"},
		{"duplicate property", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"string"}}}`, `"a" appears twice`},
		{"duplicate keyword", `{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}`, `"type" appears twice`},
		{"duplicate top-level member", `{"type":"object","required":[],"required":["a"]}`, `"required" appears twice`},
		{"object property", props(`"a":{"type":"object"}`), `type "object" is not allowed`},
		{"nested", props(`"a":{"type":"object","properties":{}}`), "nested"},
		{"null type", props(`"a":{"type":"null"}`), "not allowed"},
		{"property not an object", props(`"a":true`), "must be an object"},
		{"property null", props(`"a":null`), "must be an object"},
		{"no type", props(`"a":{"title":"A"}`), "no type"},
		{"type list", props(`"a":{"type":["string","null"]}`), "single type"},
		{"keyword the form does not check", props(`"a":{"type":"string","pattern":"^x"}`), `keyword "pattern" is not supported`},
		{"const", props(`"a":{"type":"string","const":"x"}`), `keyword "const"`},
		{"exclusive bound", props(`"a":{"type":"number","exclusiveMinimum":0}`), `keyword "exclusiveMinimum"`},
		{"multipleOf", props(`"a":{"type":"integer","multipleOf":2}`), `keyword "multipleOf"`},
		{"$ref", props(`"a":{"$ref":"#/$defs/x"}`), `keyword "$ref"`},
		{"top-level allOf", `{"type":"object","allOf":[{"required":["x"]}]}`, `keyword "allOf" is not supported at the top`},
		{"top-level $defs", `{"type":"object","$defs":{"x":{"$ref":"http://example.com/x"}}}`, `keyword "$defs"`},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"$ref":"http://example.com/x"}}`, "true or false"},
		{"keyword in another case", props(`"a":{"type":"string","MaxLength":2}`), `"MaxLength" is the JSON Schema keyword "maxLength" spelled in another case`},
		{"keyword in another case, top level", `{"type":"object","Required":["a"]}`, `"Required" is the JSON Schema keyword "required"`},
		{"keyword not for the type", props(`"a":{"type":"string","minimum":1}`), "minimum does not apply to a field of type string"},
		{"items on a string", props(`"a":{"type":"string","items":{"enum":["x"]}}`), "items does not apply"},
		{"enum of integers", props(`"a":{"type":"integer","enum":["a"]}`), "only string enums"},
		{"enum value not a string", props(`"a":{"enum":["a",1]}`), "enum value 1 is not a string"},
		{"empty enum", props(`"a":{"type":"string","enum":[]}`), "enum has no choices"},
		{"empty oneOf", props(`"a":{"type":"string","oneOf":[]}`), "oneOf has no choices"},
		{"enum value twice", props(`"a":{"enum":["a","a"]}`), `choice "a" is listed twice`},
		{"oneOf const twice", props(`"a":{"oneOf":[{"const":"a","title":"A"},{"const":"a","title":"B"}]}`), `choice "a" is listed twice`},
		{"enum and oneOf", props(`"a":{"enum":["a"],"oneOf":[{"const":"b","title":"B"}]}`), "enum and oneOf together"},
		{"enumNames length", props(`"a":{"enum":["a","b"],"enumNames":["A"]}`), "differ in length"},
		{"enumNames without enum", props(`"a":{"type":"string","enumNames":["A"]}`), "enumNames without enum"},
		{"choice without const", props(`"a":{"oneOf":[{"title":"A"}]}`), "has no const"},
		{"choice with a rule", props(`"a":{"oneOf":[{"const":"a","title":"A","minLength":3}]}`), `keyword "minLength" is not supported in a choice`},
		{"choice breaks the field's rules", props(`"a":{"type":"string","enum":["ab","abcd"],"maxLength":3}`), `choice "abcd": must be at most 3`},
		{"choice breaks the format", props(`"a":{"type":"string","format":"email","enum":["nope"]}`), "not an email address"},
		{"unknown format", props(`"a":{"type":"string","format":"ipv4"}`), `format "ipv4" is not supported`},
		{"minLength over maxLength", props(`"a":{"type":"string","minLength":3,"maxLength":2}`), "minLength 3 is more than maxLength 2"},
		{"negative length", props(`"a":{"type":"string","minLength":-1}`), "out of range"},
		{"fractional length", props(`"a":{"type":"string","maxLength":1.5}`), "not an integer"},
		{"huge length", props(`"a":{"type":"string","maxLength":4294967297}`), "out of range"},
		{"minimum over maximum", props(`"a":{"type":"number","minimum":2,"maximum":1}`), "minimum 2 is more than maximum 1"},
		{"no integer in range", props(`"a":{"type":"integer","minimum":0.2,"maximum":0.8}`), "no integer lies between"},
		{"minimum not a number", props(`"a":{"type":"number","minimum":"1"}`), "not a number"},
		{"minItems over maxItems", props(`"a":{"type":"array","items":{"enum":["x","y"]},"minItems":2,"maxItems":1}`), "minItems 2 is more than maxItems 1"},
		{"minItems over the choices", props(`"a":{"type":"array","items":{"enum":["x"]},"minItems":2}`), "minItems 2 is more than the 1 choices"},
		{"array without items", props(`"a":{"type":"array"}`), "array without items"},
		{"items not an enum", props(`"a":{"type":"array","items":{"type":"string"}}`), "multi-select"},
		{"items of integers", props(`"a":{"type":"array","items":{"type":"integer","enum":["1"]}}`), "choices are strings"},
		{"items with a rule", props(`"a":{"type":"array","items":{"enum":["x"],"pattern":"x"}}`), `keyword "pattern" is not supported in the items`},
		{"tuple items", props(`"a":{"type":"array","items":[{"enum":["x"]}]}`), "must be an object"},
		{"default of another type", props(`"a":{"type":"integer","default":"7"}`), `default "7" is not of type integer`},
		{"default boolean as text", props(`"a":{"type":"boolean","default":"true"}`), "is not of type boolean"},
		{"default not integral", props(`"a":{"type":"integer","default":1.5}`), "want an integer"},
		{"default outside the enum", props(`"a":{"enum":["x"],"default":"y"}`), `"y" is not one of`},
		{"default over maximum", props(`"a":{"type":"number","maximum":1,"default":2}`), "at most 1"},
		{"default breaks the format", props(`"a":{"type":"string","format":"uri","default":"/rel"}`), "not an absolute URI"},
		{"multi-select default outside the choices", props(`"a":{"type":"array","items":{"enum":["x"]},"default":["y"]}`), `"y" is not one of`},
		{"multi-select default twice", props(`"a":{"type":"array","items":{"enum":["x"]},"default":["x","x"]}`), "chosen twice"},
		{"title not a string", props(`"a":{"type":"string","title":1}`), "title: 1 is not a string"},
		{"annotation of the wrong type", props(`"a":{"type":"string","readOnly":"yes"}`), "readOnly"},
		{"$schema not a string", `{"type":"object","$schema":1}`, "$schema"},
		{"$schema of another draft", `{"type":"object","$schema":"http://json-schema.org/draft-04/schema#"}`, "only be validated against draft-07 or 2020-12"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseForm(json.RawMessage(c.schema))
			if err == nil {
				t.Fatalf("accepted as %+v; want a refusal saying %q", f.Fields, c.reason)
			}
			if !strings.Contains(err.Error(), c.reason) || !errors.Is(err, ErrInvalidSchema) || errors.Is(err, ErrOverLimit) {
				t.Fatalf("error %q; want ErrInvalidSchema saying %q", err, c.reason)
			}
		})
	}
}

// Issue #10 item 2: each limit refuses what is over it (naming the limit)
// and takes what is at it.
func TestParseFormLimits(t *testing.T) {
	fields := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"f%d":{"type":"boolean"}`, i)
		}
		return props(b.String())
	}
	enum := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"v%d"`, i)
		}
		return "[" + strings.Join(vals, ",") + "]"
	}
	anyOf := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`{"const":"v%d","title":"V"}`, i)
		}
		return "[" + strings.Join(vals, ",") + "]"
	}
	x := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes
	sized := func(n int) string {                             // a schema of n bytes
		base := props(`"a":{"type":"string","x-pad":""}`)
		return props(`"a":{"type":"string","x-pad":"` + strings.Repeat("x", n-len(base)) + `"}`)
	}
	l := Limits{MaxSchemaBytes: 2000, MaxFields: 5, MaxEnumValues: 4, MaxTitle: 8, MaxDescription: 12}
	for _, c := range []struct {
		name, at, over, limit string
	}{
		{"schema bytes", sized(2000), sized(2001), "MaxSchemaBytes"},
		{"fields", fields(5), fields(6), "MaxFields"},
		{"required names", fields(5), `{"type":"object","required":["a","a","a","a","a","a"]}`, "MaxFields"},
		{"enum values", props(`"a":{"enum":` + enum(4) + `}`), props(`"a":{"enum":` + enum(5) + `}`), "MaxEnumValues"},
		{"oneOf values", props(`"a":{"oneOf":` + anyOf(4) + `}`), props(`"a":{"oneOf":` + anyOf(5) + `}`), "MaxEnumValues"},
		{"multi-select values", props(`"a":{"type":"array","items":{"anyOf":` + anyOf(4) + `}}`),
			props(`"a":{"type":"array","items":{"anyOf":` + anyOf(5) + `}}`), "MaxEnumValues"},
		{"field name", props(`"` + x(8) + `":{"type":"boolean"}`), props(`"` + x(9) + `":{"type":"boolean"}`), "MaxTitle"},
		{"field title", props(`"a":{"type":"boolean","title":"` + x(8) + `"}`), props(`"a":{"type":"boolean","title":"` + x(9) + `"}`), "MaxTitle"},
		{"schema title", `{"type":"object","title":"` + x(8) + `"}`, `{"type":"object","title":"` + x(9) + `"}`, "MaxTitle"},
		{"enum value", props(`"a":{"enum":["` + x(8) + `"]}`), props(`"a":{"enum":["` + x(9) + `"]}`), "MaxTitle"},
		{"enum name", props(`"a":{"enum":["a"],"enumNames":["` + x(8) + `"]}`), props(`"a":{"enum":["a"],"enumNames":["` + x(9) + `"]}`), "MaxTitle"},
		{"choice title", props(`"a":{"oneOf":[{"const":"a","title":"` + x(8) + `"}]}`), props(`"a":{"oneOf":[{"const":"a","title":"` + x(9) + `"}]}`), "MaxTitle"},
		{"field description", props(`"a":{"type":"boolean","description":"` + x(12) + `"}`), props(`"a":{"type":"boolean","description":"` + x(13) + `"}`), "MaxDescription"},
		{"schema description", `{"type":"object","description":"` + x(12) + `"}`, `{"type":"object","description":"` + x(13) + `"}`, "MaxDescription"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "required names" {
				if _, err := l.ParseForm(json.RawMessage(c.at)); err != nil {
					t.Fatalf("at the limit: %v", err)
				}
			}
			_, err := l.ParseForm(json.RawMessage(c.over))
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != c.limit || !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "over the limit "+c.limit) {
				t.Fatalf("over the limit: %v; want a LimitError of %s", err, c.limit)
			}
		})
	}
	if (Limits{}).withDefaults() != DefaultLimits {
		t.Fatal("the zero Limits is not DefaultLimits")
	}
	if got := (Limits{MaxFields: 3}).withDefaults(); got.MaxFields != 3 || got.MaxTitle != DefaultLimits.MaxTitle {
		t.Fatalf("a partial Limits = %+v", got)
	}
}

// schemaOf returns a schema of n string fields, every one required.
func schemaOf(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d":{"type":"string"}`, i)
	}
	b.WriteString(`},"required":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d"`, i)
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// hugeLimits let a 40,000-field schema through.
var hugeLimits = Limits{MaxSchemaBytes: 16 << 20, MaxFields: 50000}

// Issue #10 item 3: a 40,000-field schema is refused before it is parsed;
// with limits raised that far it parses, in time linear in its size (see
// BenchmarkParseForm40000; no timing is asserted here).
func TestParseForm40000Fields(t *testing.T) {
	s := schemaOf(40000)
	var le *LimitError
	if _, err := ParseForm(s); !errors.As(err, &le) || le.Limit != "MaxSchemaBytes" {
		t.Fatalf("default limits: %v, want a refusal by MaxSchemaBytes", err)
	}
	if _, err := (Limits{MaxSchemaBytes: 16 << 20}).ParseForm(s); !errors.As(err, &le) || le.Limit != "MaxFields" ||
		!strings.Contains(err.Error(), "more than 50 properties") {
		t.Fatalf("bytes raised: %v, want a refusal by MaxFields", err)
	}
	f, err := hugeLimits.ParseForm(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Fields) != 40000 || f.Fields[39999].Name != "f39999" || !f.Fields[39999].Required {
		t.Fatalf("%d fields, last %+v", len(f.Fields), f.Fields[len(f.Fields)-1])
	}
}

// BenchmarkParseForm40000 parses a schema of 40,000 required fields: with
// the default limits (refused on its size, before any parsing) and with
// limits raised to take it (the whole parse; it was quadratic in the
// required list before issue #10).
func BenchmarkParseForm40000(b *testing.B) {
	s := schemaOf(40000)
	b.Run("default-limits", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if _, err := ParseForm(s); err == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("raised-limits", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if _, err := hugeLimits.ParseForm(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
