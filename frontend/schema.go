package frontend

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostSchema is a question's schema as go-sdk's server side accepts it
// for the host: go-sdk v1.8.0 refuses a titled multi-select whose items
// say "type": "string" beside anyOf (SEP-1330 allows it; go-sdk's own
// conformance server sends it), so that "type" is dropped. The choices
// and the properties' order stay as the server sent them; any other
// schema is returned unchanged, as is one that does not parse (go-sdk
// then says what is wrong with it).
func hostSchema(raw json.RawMessage) json.RawMessage {
	top, ok := orderedMembers(raw)
	if !ok {
		return raw
	}
	changed := false
	for i, m := range top {
		if m.name != "properties" {
			continue
		}
		props, ok := orderedMembers(m.value)
		if !ok {
			return raw
		}
		for j, p := range props {
			if v, ok := titledMultiItems(p.value); ok {
				props[j].value, changed = v, true
			}
		}
		top[i].value = encodeMembers(props)
	}
	if !changed {
		return raw
	}
	return encodeMembers(top)
}

// titledMultiItems rewrites one property: an array whose items have
// "type": "string", anyOf and no enum loses the items' "type".
func titledMultiItems(prop json.RawMessage) (json.RawMessage, bool) {
	var p struct {
		Type  string                     `json:"type"`
		Items map[string]json.RawMessage `json:"items"`
	}
	if json.Unmarshal(prop, &p) != nil || p.Type != "array" || p.Items == nil {
		return nil, false
	}
	_, hasAnyOf := p.Items["anyOf"]
	_, hasEnum := p.Items["enum"]
	if !hasAnyOf || hasEnum || string(p.Items["type"]) != `"string"` {
		return nil, false
	}
	members, ok := orderedMembers(prop)
	if !ok {
		return nil, false
	}
	delete(p.Items, "type")
	items, err := json.Marshal(p.Items)
	if err != nil {
		return nil, false
	}
	for i, m := range members {
		if m.name == "items" {
			members[i].value = items
		}
	}
	return encodeMembers(members), true
}

// member is one name and raw value of a JSON object, in order.
type member struct {
	name  string
	value json.RawMessage
}

// orderedMembers are an object's members in their order; false when raw
// is not one object.
func orderedMembers(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{name, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // something after the object
	}
	return out, true
}

// encodeMembers writes members back as one object, in order.
func encodeMembers(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// hostInputSchema is a tool's input schema as the host is offered it, and
// whether it can be offered at all. MCP says an input schema is an object
// schema, and go-sdk's server refuses (panics on) anything else; some
// servers send one without "type" (`{}`, or only "properties"), which
// their arguments object satisfies all the same. Such a schema gets
// "type": "object" in front, its members kept in order, rather than the
// tool going missing from the host. A schema whose "type" is anything
// else, or that is not a JSON object, cannot be offered.
func hostInputSchema(raw json.RawMessage) (json.RawMessage, bool) {
	top, ok := orderedMembers(raw)
	if !ok {
		return nil, false
	}
	// The last "type" counts, as for encoding/json and go-sdk.
	for i := len(top) - 1; i >= 0; i-- {
		if top[i].name == "type" {
			var typ string
			return raw, json.Unmarshal(top[i].value, &typ) == nil && typ == "object"
		}
	}
	return encodeMembers(append([]member{{"type", json.RawMessage(`"object"`)}}, top...)), true
}

// hostOutputSchema is a tool's output schema as the host is offered it
// (issue #19 item 4), and whether it can be offered. None (nil) is none.
// MCP says an output schema is an object schema (structuredContent is an
// object), and hosts built on the TypeScript SDK refuse a whole tools/list
// whose outputSchema lacks "type": "object"; so it is handled like an
// input schema: one without "type" gets "type": "object" in front, and
// one of another type, or not a JSON object, is left out (the tool is
// still offered, without it). It must also decode as a whole (go-sdk's
// AddTool decodes it, and panics on a number like 1e999): a tool is never
// lost for its output schema.
func hostOutputSchema(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	out, ok := hostInputSchema(raw)
	if !ok {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(out, &m) != nil {
		return nil, false
	}
	return out, true
}

// hostIcons are a server's icons (JSON) as go-sdk offers them; false
// when they do not parse.
func hostIcons(raw json.RawMessage) ([]mcp.Icon, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var icons []mcp.Icon
	if json.Unmarshal(raw, &icons) != nil {
		return nil, false
	}
	return icons, true
}

// hostMeta is a server's _meta (a JSON object) with each value kept as
// the server's bytes; false when it is not an object.
func hostMeta(raw json.RawMessage) (mcp.Meta, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	if m == nil { // null
		return nil, true
	}
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, true
}

// hostToolAnnotations are a tool's annotations as the host gets them: a
// trusted server's whole; of any other only the title, which is display
// text and no claim about what the tool does (SPEC §9 A8: readOnlyHint
// and friends are dropped). nil when there are none; false when they do
// not parse.
func hostToolAnnotations(raw json.RawMessage, trusted bool) (*mcp.ToolAnnotations, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var a mcp.ToolAnnotations
	if json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	if trusted {
		return &a, true
	}
	if a.Title == "" {
		return nil, true
	}
	return &mcp.ToolAnnotations{Title: a.Title}, true
}

// hostAnnotations are a resource's or template's annotations (audience,
// priority, lastModified); false when they do not parse.
func hostAnnotations(raw json.RawMessage) (*mcp.Annotations, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var a mcp.Annotations
	if json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	return &a, true
}
