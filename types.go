package remotemcp

import "github.com/modelcontextprotocol/go-sdk/mcp"

// ElicitRequest and ElicitResult are go-sdk's elicitation types, re-exported
// so embedders need not import the SDK for the callback.
type (
	ElicitRequest = mcp.ElicitRequest
	ElicitResult  = mcp.ElicitResult
)
