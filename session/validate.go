package session

import (
	"encoding/json"
	"math"
	"net/url"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of what a server may hand us (R2.10). They bound memory and keep
// a hostile server from flooding the catalog.
const (
	maxNameLen     = 512
	maxCatalogSize = 10000
	maxURILen      = 8192
)

func validName(kind, name string) error {
	switch {
	case name == "":
		return validationErrorf("%s with an empty name", kind)
	case len(name) > maxNameLen:
		return validationErrorf("%s name longer than %d bytes", kind, maxNameLen)
	case !utf8.ValidString(name):
		return validationErrorf("%s name is not valid UTF-8", kind)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return validationErrorf("%s name %q contains a control character", kind, name)
		}
	}
	return nil
}

// validateTools checks a tools/list result: unique, sane names and an
// object input schema.
func validateTools(tools []*mcp.Tool) error {
	if len(tools) > maxCatalogSize {
		return validationErrorf("server lists %d tools (more than %d)", len(tools), maxCatalogSize)
	}
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		if t == nil {
			return validationErrorf("tools[%d] is null", i)
		}
		if err := validName("tool", t.Name); err != nil {
			return err
		}
		if seen[t.Name] {
			return validationErrorf("tool %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if _, ok := t.InputSchema.(map[string]any); !ok {
			return validationErrorf("tool %q: inputSchema is not a JSON object", t.Name)
		}
	}
	return nil
}

// dropBadOutputSchemas leaves out each tool's outputSchema that is not a
// JSON object (MCP: an object schema) rather than refusing the whole
// listing for one tool's optional field; it returns the names of those
// tools, for a log line. What an object schema says is the hosts' to
// judge (the MCP front end checks its "type", frontend.hostOutputSchema).
func dropBadOutputSchemas(tools []*mcp.Tool) []string {
	var dropped []string
	for _, t := range tools {
		if t == nil || t.OutputSchema == nil {
			continue
		}
		if _, ok := t.OutputSchema.(map[string]any); !ok {
			t.OutputSchema = nil
			dropped = append(dropped, t.Name)
		}
	}
	return dropped
}

func validatePrompts(prompts []*mcp.Prompt) error {
	if len(prompts) > maxCatalogSize {
		return validationErrorf("server lists %d prompts (more than %d)", len(prompts), maxCatalogSize)
	}
	seen := make(map[string]bool, len(prompts))
	for i, p := range prompts {
		if p == nil {
			return validationErrorf("prompts[%d] is null", i)
		}
		if err := validName("prompt", p.Name); err != nil {
			return err
		}
		if seen[p.Name] {
			return validationErrorf("prompt %q listed twice", p.Name)
		}
		seen[p.Name] = true
		for j, a := range p.Arguments {
			if a == nil {
				return validationErrorf("prompt %q: arguments[%d] is null", p.Name, j)
			}
			if err := validName("prompt argument", a.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

func validURI(kind, u string) error {
	if u == "" {
		return validationErrorf("%s with an empty uri", kind)
	}
	if len(u) > maxURILen {
		return validationErrorf("%s uri longer than %d bytes", kind, maxURILen)
	}
	return nil
}

func validateResources(rs []*mcp.Resource) error {
	if len(rs) > maxCatalogSize {
		return validationErrorf("server lists %d resources (more than %d)", len(rs), maxCatalogSize)
	}
	for i, r := range rs {
		if r == nil {
			return validationErrorf("resources[%d] is null", i)
		}
		if err := validURI("resource", r.URI); err != nil {
			return err
		}
		if _, err := url.Parse(r.URI); err != nil {
			return validationErrorf("resource uri %q: %v", r.URI, err)
		}
	}
	return nil
}

func validateTemplates(ts []*mcp.ResourceTemplate) error {
	if len(ts) > maxCatalogSize {
		return validationErrorf("server lists %d resource templates (more than %d)", len(ts), maxCatalogSize)
	}
	for i, t := range ts {
		if t == nil {
			return validationErrorf("resourceTemplates[%d] is null", i)
		}
		if err := validURI("resource template", t.URITemplate); err != nil {
			return err
		}
	}
	return nil
}

// ValidateCallResult checks a tools/call result before it is returned
// (R2.10): content blocks must be non-nil and of a known kind.
func ValidateCallResult(r *mcp.CallToolResult) error {
	if r == nil {
		return validationErrorf("tools/call returned no result")
	}
	for i, c := range r.Content {
		if c == nil {
			return validationErrorf("content[%d] is null", i)
		}
		switch c := c.(type) {
		case *mcp.TextContent, *mcp.ImageContent, *mcp.AudioContent, *mcp.ResourceLink:
		case *mcp.EmbeddedResource:
			if c.Resource == nil {
				return validationErrorf("content[%d]: embedded resource without contents", i)
			}
		default:
			return validationErrorf("content[%d]: unsupported content type %T", i, c)
		}
	}
	if r.StructuredContent != nil && !plainJSON(r.StructuredContent, 0) {
		// Not a value as decoded from JSON (or one json.Marshal may
		// refuse): encoding it is the test.
		if _, err := json.Marshal(r.StructuredContent); err != nil {
			return validationErrorf("structuredContent: %v", err)
		}
	}
	return nil
}

// maxPlainDepth bounds plainJSON's walk; deeper values are left to
// json.Marshal, which also notices cycles.
const maxPlainDepth = 256

// plainJSON reports, without encoding it, that json.Marshal accepts v: v
// is made of what decoding JSON into an any produces (maps, slices,
// strings, finite float64s, bools, nil). false means "not known", not
// "refused".
func plainJSON(v any, depth int) bool {
	switch x := v.(type) {
	case nil, string, bool:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		if depth == maxPlainDepth {
			return false
		}
		for _, e := range x {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if depth == maxPlainDepth {
			return false
		}
		for _, e := range x {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// ValidatePromptResult checks a prompts/get result (R2.10).
func ValidatePromptResult(r *mcp.GetPromptResult) error {
	if r == nil {
		return validationErrorf("prompts/get returned no result")
	}
	for i, m := range r.Messages {
		if m == nil || m.Content == nil {
			return validationErrorf("messages[%d] is empty", i)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return validationErrorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return nil
}

// ValidateReadResult checks a resources/read result (R2.10).
func ValidateReadResult(r *mcp.ReadResourceResult) error {
	if r == nil {
		return validationErrorf("resources/read returned no result")
	}
	for i, c := range r.Contents {
		if c == nil {
			return validationErrorf("contents[%d] is null", i)
		}
		if err := validURI("resource contents", c.URI); err != nil {
			return err
		}
	}
	return nil
}
