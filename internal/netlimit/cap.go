package netlimit

// The connection caps of the local TCP listeners. A host holds one
// connection per open stream plus one or two for its requests; a browser
// holds up to six per origin; an OAuth callback gets one redirect (and a
// favicon). The caps leave room for all of that many times over.
const (
	// MaxPageConns caps the settings page's listener (page, login, its
	// API under the secret prefix, the event stream, the OAuth callback
	// of the daemon).
	MaxPageConns = 128
	// MaxMCPConns caps the listener of "mcp --http" and "serve
	// --mcp-http": a stream per live session with room for requests.
	MaxMCPConns = 512
	// MaxCallbackConns caps a sign-in's own OAuth callback listener.
	MaxCallbackConns = 16
	// listenersPerProcess is how many capped listeners one process may
	// run together (page, MCP endpoint, callback): each gets at most its
	// share of the descriptors above Headroom.
	listenersPerProcess = 3
	// minCap is the least a listener gets however low the descriptor
	// limit is.
	minCap = 8
)

// Cap is want, lowered when this process's limit on open files could
// not hold every capped listener full at once plus Headroom: each
// listener gets at most its share of the descriptors above Headroom, and
// at least minCap.
func Cap(want int) int {
	soft, ok := openFileLimit()
	if !ok {
		return want
	}
	return capFor(want, soft)
}

// capFor is Cap with the limit on open files given.
func capFor(want int, soft uint64) int {
	if soft <= Headroom {
		return min(want, minCap)
	}
	share := (soft - Headroom) / listenersPerProcess
	if share < uint64(want) {
		return max(int(share), minCap)
	}
	return want
}
