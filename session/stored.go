package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/remotemcp/remotemcp/internal/jsonenc"
)

// Catalogs kept across sessions and processes (issue #12): the last good
// catalog of a server is stored, so a lazy or hibernated server lists its
// tools without connecting. What comes back from storage is untrusted
// like anything a server sent: it is decoded with bounds and validated
// again (R2.10).

// MaxStoredCatalog bounds a stored catalog's encoding.
const MaxStoredCatalog = 64 << 20

// storedCatalogVersion is the encoding's version; another is refused.
const storedCatalogVersion = 1

// storedCatalog is the encoding of a Catalog. Tools keep the raw bytes of
// their input schemas (R4.1).
type storedCatalog struct {
	Version      int                     `json:"v"`
	Key          string                  `json:"key"`
	Saved        time.Time               `json:"saved"`
	Tools        []storedTool            `json:"tools,omitempty"`
	Prompts      []*mcp.Prompt           `json:"prompts,omitempty"`
	Resources    []*mcp.Resource         `json:"resources,omitempty"`
	Templates    []*mcp.ResourceTemplate `json:"templates,omitempty"`
	Instructions string                  `json:"instructions,omitempty"`
}

type storedTool struct {
	Tool         json.RawMessage `json:"tool"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// ErrStaleCatalog is a stored catalog made for another URL or sign-in
// than the server's current one (R2.4): it is discarded.
var ErrStaleCatalog = errors.New("the stored catalog belongs to another URL or sign-in of the server")

// EncodeCatalog encodes c for storage under key (what the catalog belongs
// to: see CatalogKey). The failures of refreshes are not kept.
func EncodeCatalog(c *Catalog, key string) ([]byte, error) {
	if c == nil {
		return nil, errors.New("encode catalog: nil")
	}
	sc := storedCatalog{Version: storedCatalogVersion, Key: key, Saved: time.Now().UTC(),
		Prompts: c.Prompts, Resources: c.Resources, Templates: c.Templates, Instructions: c.Instructions}
	for _, t := range c.Tools {
		if t.Tool == nil {
			continue
		}
		cp := *t.Tool
		// Kept as the server's bytes beside it.
		cp.InputSchema = nil
		st := storedTool{InputSchema: t.RawInputSchema}
		if t.RawOutputSchema != nil {
			cp.OutputSchema, st.OutputSchema = nil, t.RawOutputSchema
		}
		if t.RawMeta != nil {
			cp.Meta, st.Meta = nil, t.RawMeta
		}
		b, err := jsonenc.Marshal(&cp)
		if err != nil {
			return nil, fmt.Errorf("encode catalog: tool %s: %w", t.Name, err)
		}
		st.Tool = b
		sc.Tools = append(sc.Tools, st)
	}
	b, err := jsonenc.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("encode catalog: %w", err)
	}
	if len(b) > MaxStoredCatalog {
		return nil, fmt.Errorf("encode catalog: %d bytes, more than %d", len(b), MaxStoredCatalog)
	}
	return b, nil
}

// DecodeCatalog decodes a stored catalog and validates it like a fresh
// listing (R2.10). A catalog stored under another key is ErrStaleCatalog.
func DecodeCatalog(b []byte, key string) (*Catalog, error) {
	if len(b) > MaxStoredCatalog {
		return nil, fmt.Errorf("stored catalog: %d bytes, more than %d", len(b), MaxStoredCatalog)
	}
	var sc storedCatalog
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("stored catalog: %w", err)
	}
	if sc.Version != storedCatalogVersion {
		return nil, fmt.Errorf("stored catalog: version %d, want %d", sc.Version, storedCatalogVersion)
	}
	if sc.Key != key {
		return nil, ErrStaleCatalog
	}
	c := &Catalog{Prompts: sc.Prompts, Resources: sc.Resources, Templates: sc.Templates, Instructions: clip(sc.Instructions, MaxInstructions)}
	tools := make([]*mcp.Tool, 0, len(sc.Tools))
	for i, st := range sc.Tools {
		var t mcp.Tool
		if err := json.Unmarshal(st.Tool, &t); err != nil {
			return nil, fmt.Errorf("stored catalog: tools[%d]: %w", i, err)
		}
		raw := bytes.TrimSpace(st.InputSchema)
		if err := json.Unmarshal(raw, &t.InputSchema); err != nil {
			return nil, fmt.Errorf("stored catalog: tool %q: inputSchema: %w", t.Name, err)
		}
		out, err := storedRaw(st.OutputSchema, &t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("stored catalog: tool %q: outputSchema: %w", t.Name, err)
		}
		meta, err := storedRaw(st.Meta, &t.Meta)
		if err != nil {
			return nil, fmt.Errorf("stored catalog: tool %q: _meta: %w", t.Name, err)
		}
		tools = append(tools, &t)
		c.Tools = append(c.Tools, Tool{Tool: &t, RawInputSchema: json.RawMessage(raw), RawOutputSchema: out, RawMeta: meta})
	}
	if err := ValidateCatalog(c, tools); err != nil {
		return nil, fmt.Errorf("stored catalog: %w", err)
	}
	// Checked again like a fresh listing; nothing to log to here, and the
	// listing that stored the catalog logged it already.
	dropBadOutputSchemas(tools)
	for i := range c.Tools {
		if c.Tools[i].OutputSchema == nil {
			c.Tools[i].RawOutputSchema = nil
		}
		// Checked; from now on only the server's bytes are read (R4.1):
		// the decoded schema would stay beside them for as long as the
		// catalog is kept, most of a stored tool's memory (issue #21).
		c.Tools[i].InputSchema = nil
	}
	return c, nil
}

// storedRaw decodes a field stored as the server's bytes beside its tool
// into dst and returns those bytes. A catalog stored before the field was
// kept apart has it inside the tool (decoded is that value): its bytes
// are encoded again. Absent or null is nil.
func storedRaw[T any](raw json.RawMessage, dst *T) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if empty(*dst) {
			return nil, nil
		}
		return json.Marshal(*dst)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return nil, err
	}
	return raw, nil
}

// ValidateCatalog checks a whole catalog as its listings are checked
// (R2.10); tools are its tools' definitions.
func ValidateCatalog(c *Catalog, tools []*mcp.Tool) error {
	if err := validateTools(tools); err != nil {
		return err
	}
	if err := validatePrompts(c.Prompts); err != nil {
		return err
	}
	if err := validateResources(c.Resources); err != nil {
		return err
	}
	return validateTemplates(c.Templates)
}

// Busy reports whether the session has calls in flight.
func (s *Session) Busy() bool {
	s.calls.Lock()
	defer s.calls.Unlock()
	return len(s.ops) > 0
}

// LastUse is when the session last served a request of a caller (a call,
// a read, a prompt, a subscription); background listings do not count.
func (s *Session) LastUse() time.Time { return time.Unix(0, s.lastUse.Load()) }

// CloseIfIdle marks the session closing, so that it admits no call any
// more, when no call is in flight; false when one is (or it is closing
// already). The owner then closes it: a hibernating session never cuts
// a call, and a call that comes too late was never sent
// (ErrCancelledBeforeDispatch with ErrClosed).
func (s *Session) CloseIfIdle() bool {
	s.calls.Lock()
	defer s.calls.Unlock()
	if len(s.ops) > 0 || s.closing {
		return false
	}
	s.closing = true
	return true
}
