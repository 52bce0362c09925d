package engine

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/remotemcp/remotemcp/elicit"
)

// TestCardFormKeepsSchemaOrder: a question's form lists its fields in the
// order of the schema's properties, not by name.
func TestCardFormKeepsSchemaOrder(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"age":{"type":"integer"},"city":{"type":"string"}}}`)
	f, err := elicit.DefaultLimits.ParseForm(schema)
	if err != nil {
		t.Fatal(err)
	}
	got := formOf(f, propertyOrder(schema))
	var names []string
	for _, fl := range got.Fields {
		names = append(names, fl.Name)
	}
	if !slices.Equal(names, []string{"name", "age", "city"}) {
		t.Fatalf("fields %v", names)
	}
	if o := propertyOrder(json.RawMessage(`not json`)); o != nil {
		t.Fatalf("order of garbage: %v", o)
	}
}
