package engine

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/manager"
)

// ElicitRequest and ElicitResult are go-sdk's elicitation types, and
// ElicitInfo says which server and call asked: the types of
// Options.Elicit, re-exported so embedders need not import the SDK.
type (
	ElicitRequest = mcp.ElicitRequest
	ElicitResult  = mcp.ElicitResult
	ElicitInfo    = manager.ElicitInfo
)
