package session

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/redact"
)

// LogMessage is one notifications/message of a server (issue #11 item 7),
// bounded and redacted, for the request log and the logs command.
type LogMessage struct {
	Time   time.Time `json:"time"`
	Level  string    `json:"level"`
	Logger string    `json:"logger,omitempty"`
	// Text is the message's data as text (a string as is, anything else
	// as JSON), cut to MaxLogText bytes and redacted.
	Text string `json:"text"`
}

// MaxLogText bounds the text kept of one log message, and
// MaxInstructions the server's instructions kept with the catalog.
const (
	MaxLogText      = 4 << 10
	MaxInstructions = 16 << 10
)

// DefaultLogLevel is asked of a server with logging when its config names
// no level (SPEC §9 A2).
const DefaultLogLevel = "warning"

func (s *Session) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	if req == nil || req.Params == nil || s.onLogMsg == nil {
		return
	}
	p := req.Params
	var text string
	switch d := p.Data.(type) {
	case string:
		text = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return
		}
		text = string(b)
	}
	s.onLogMsg(LogMessage{Time: time.Now(), Level: clip(string(p.Level), 16), Logger: clip(p.Logger, 128),
		Text: redact.Text(clip(text, MaxLogText))})
}

// setLogLevel asks a server that offers logging for the configured level.
func (s *Session) setLogLevel(ctx context.Context) {
	ir := s.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	level := s.srv.LogLevel
	if level == "" {
		level = DefaultLogLevel
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		s.log.Info("logging/setLevel refused; the server's own level applies", "level", level, "err", err)
	}
}

// Instructions are the server's instructions from initialize: untrusted
// text the server wants the agent to read, cut to MaxInstructions bytes.
func (s *Session) Instructions() string {
	ir := s.cs.InitializeResult()
	if ir == nil {
		return ""
	}
	return clip(ir.Instructions, MaxInstructions)
}

// clip cuts s to at most n bytes on a rune boundary, and drops invalid
// UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
