package agent

import (
	"context"
)

// KindInstructions marks a server's instructions (initialize): text the
// server wants the agent to read, untrusted like any other server text.
const KindInstructions Kind = "instructions"

// Instructions returns the instructions of every enabled server that gave
// some, one fenced block per server, in server order (issue #11 item 7).
// A server that is not connected contributes its stored catalog's
// instructions: Instructions never connects one (R2.3); call it again
// after a catalog change.
func (r *Registry) Instructions(ctx context.Context) []ContextBlock {
	var out []ContextBlock
	for _, st := range r.be.Status() {
		if !st.Enabled {
			continue
		}
		// The session's catalog when connected, else the stored one;
		// CachedCatalog never connects.
		c, err := r.be.CachedCatalog(ctx, st.ID)
		if err != nil || c == nil || c.Instructions == "" {
			continue
		}
		out = append(out, InstructionsBlock(st.ID, c.Instructions))
	}
	return out
}

// InstructionsBlock is a server's instructions as a block of kind
// instructions with a fresh fence, for a host that shows them to its
// model (the MCP front end's initialize instructions, issue #20 item 3):
// Render fences them so that no heading or closer inside passes for
// remotemcp's text.
func InstructionsBlock(server, text string) ContextBlock {
	return ContextBlock{Provenance: Provenance{Server: server, Kind: KindInstructions},
		MIMEType: "text/plain", Text: text, fence: newFence()}
}
