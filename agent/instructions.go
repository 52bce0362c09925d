package agent

// KindInstructions marks a server's instructions (initialize): text the
// server wants the agent to read, untrusted like any other server text.
const KindInstructions Kind = "instructions"

// InstructionsBlock is a server's instructions as a block of kind
// instructions with a fresh fence, for a host that shows them to its
// model (the MCP front end's initialize instructions, issue #20 item 3):
// Render fences them so that no heading or closer inside passes for
// remotemcp's text.
func InstructionsBlock(server, text string) ContextBlock {
	return ContextBlock{Provenance: Provenance{Server: server, Kind: KindInstructions},
		MIMEType: "text/plain", Text: text, fence: newFence()}
}
