package agent

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultResultBudget is the default size budget of one result, in
// characters of text (R4.6).
const DefaultResultBudget = 100_000

// DefaultBinaryCost is what one image, audio clip or blob counts against
// the budget: binary data is never dumped as text, but it still costs the
// model context when a host passes it on natively.
const DefaultBinaryCost = 1_000

// Budget bounds one converted result, prompt or read (R4.6).
type Budget struct {
	// Chars is the size budget in characters of text
	// (DefaultResultBudget when zero or negative).
	Chars int
	// BinaryCost is what one binary item counts against it
	// (DefaultBinaryCost when zero or negative).
	BinaryCost int
}

// start begins spending b, its defaults filled in.
func (b Budget) start() *budget {
	if b.Chars <= 0 {
		b.Chars = DefaultResultBudget
	}
	if b.BinaryCost <= 0 {
		b.BinaryCost = DefaultBinaryCost
	}
	return newBudget(b.Chars, b.BinaryCost)
}

// budget tracks what is left of a result's size budget and what was cut.
type budget struct {
	total, left, binaryCost int

	originalChars, shownChars int
	droppedBlocks             int
	droppedChars              int
	droppedBinary             int
	truncated                 bool
}

func newBudget(total, binaryCost int) *budget {
	return &budget{total: total, left: total, binaryCost: binaryCost}
}

// text makes a text block, cut to what is left of the budget. ok is false
// when nothing was left and the block was dropped whole.
func (bu *budget) text(prov Provenance, mime, role, text string) (ContextBlock, bool) {
	n := runeLen(text)
	bu.originalChars += n
	b := ContextBlock{Provenance: prov, MIMEType: mime, Role: role, fence: newFence()}
	switch {
	case n <= bu.left:
		b.Text = text
		bu.left -= n
		bu.shownChars += n
	case bu.left > 0:
		b.Text = cutRunes(text, bu.left)
		b.Truncated = &Truncation{ShownChars: bu.left, OriginalChars: n}
		bu.shownChars += bu.left
		bu.left = 0
		bu.truncated = true
	default:
		bu.droppedBlocks++
		bu.droppedChars += n
		bu.truncated = true
		return ContextBlock{}, false
	}
	return b, true
}

// binary makes a summary block; the bytes ride along only if their fixed
// cost fits the budget.
func (bu *budget) binary(prov Provenance, mime string, data []byte) ContextBlock {
	if mime == "" {
		mime = "application/octet-stream"
	}
	b := ContextBlock{
		Provenance: prov, MIMEType: mime, fence: newFence(),
		Text: fmt.Sprintf("[binary %s, %d bytes]", mime, len(data)),
	}
	if bu.binaryCost <= bu.left {
		bu.left -= bu.binaryCost
		b.Data = data
	} else {
		bu.droppedBinary++
		bu.truncated = true
	}
	return b
}

// content converts one MCP content item. ok is false when it was dropped.
func (bu *budget) content(c mcp.Content, prov Provenance, role string) (ContextBlock, bool) {
	switch c := c.(type) {
	case *mcp.TextContent:
		return bu.text(prov, "text/plain", role, c.Text)
	case *mcp.ImageContent:
		b := bu.binary(prov, c.MIMEType, c.Data)
		b.Role = role
		return b, true
	case *mcp.AudioContent:
		b := bu.binary(prov, c.MIMEType, c.Data)
		b.Role = role
		return b, true
	case *mcp.ResourceLink:
		prov.URI = c.URI
		text := fmt.Sprintf("[resource link] %s %s", c.Name, c.URI)
		if c.MIMEType != "" {
			text += " (" + c.MIMEType + ")"
		}
		return bu.text(prov, "text/plain", role, text)
	case *mcp.EmbeddedResource:
		rc := c.Resource
		if rc == nil {
			return ContextBlock{}, false
		}
		prov.URI = rc.URI
		if rc.Blob != nil {
			b := bu.binary(prov, rc.MIMEType, rc.Blob)
			b.Role = role
			return b, true
		}
		mime := rc.MIMEType
		if mime == "" {
			mime = "text/plain"
		}
		return bu.text(prov, mime, role, rc.Text)
	}
	return bu.text(prov, "text/plain", role, fmt.Sprintf("[unsupported content %T]", c))
}

// notes are the trusted lines that say what the budget cut.
func (bu *budget) notes() []string {
	var out []string
	if bu.droppedBlocks > 0 {
		out = append(out, fmt.Sprintf("[remotemcp: %d more content block(s) with %d characters were omitted: the result budget of %d characters was used up]",
			bu.droppedBlocks, bu.droppedChars, bu.total))
	}
	if bu.droppedBinary > 0 {
		out = append(out, fmt.Sprintf("[remotemcp: the data of %d binary item(s) was omitted to fit the result budget; only summaries are shown]", bu.droppedBinary))
	}
	return out
}

// structured budgets a tool's structured content; it is kept only whole,
// since half a JSON value is useless.
func (bu *budget) structured(v any) (json.RawMessage, string) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, "[remotemcp: the structured content could not be encoded and was omitted]"
	}
	n := runeLen(string(raw))
	bu.originalChars += n
	if n > bu.left {
		bu.truncated = true
		return nil, fmt.Sprintf("[remotemcp: the structured content (%d characters) was omitted: it does not fit the result budget of %d characters]", n, bu.total)
	}
	bu.left -= n
	bu.shownChars += n
	return raw, ""
}
