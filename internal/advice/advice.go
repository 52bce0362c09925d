// Package advice shows the libraries' typed errors with the words of
// localapi.Table (issue #21 item 3). The libraries (manager, session)
// return errors that carry data — the server, the tool, the held hash,
// when the next attempt is due, the limit — and name no command; where
// an error's text reaches a person or a model (the engine's answers,
// the agent's results, a server's reason), it goes through Text or Into,
// which add the table's advice at the place each error's WithAdvice
// puts it. So the texts people and models read stay what they were,
// and the words live in one table.
package advice

import (
	"errors"
	"strconv"
	"strings"

	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// Text is err's message with each typed error in its chain given its
// advice; "" for nil.
func Text(err error) string {
	if err == nil {
		return ""
	}
	return Into(err.Error(), err)
}

// Into is text, a message that holds err's (err's own, or a reason made
// of it), with each typed error of err's chain given its advice in
// place: its plain text, where text has it, becomes its text with
// advice. A text without them is returned as it is.
func Into(text string, err error) string {
	if err == nil {
		return text
	}
	// Outer errors first: a backoff's text holds the failure it wraps,
	// which may be a limit's.
	if be := (*manager.BackoffError)(nil); errors.As(err, &be) {
		text = swap(text, be.Error(), be.WithAdvice(words(localapi.ErrorBackoff, "id", be.ServerID)))
	}
	if he := (*manager.HeldError)(nil); errors.As(err, &he) {
		text = swap(text, he.Error(), he.WithAdvice(words(localapi.ErrorToolHeld, "id", he.ServerID, "tool", he.Tool)))
	}
	if le := (*session.LimitError)(nil); errors.As(err, &le) {
		text = swap(text, le.Error(), le.WithAdvice(words(localapi.ErrorOverLimit, "id", le.Server, "limit", le.Limit)))
	}
	return text
}

// swap replaces the first plain in text with advised.
func swap(text, plain, advised string) string {
	if plain == advised {
		return text
	}
	return strings.Replace(text, plain, advised, 1)
}

// words is the table's advice for kind, its placeholders filled from
// kv (name, value, …).
func words(kind localapi.ErrorKind, kv ...string) string {
	return localapi.Fill(localapi.Table.Errors[kind].Advice, vars(kv...))
}

func vars(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// agent is the table's sentence for an agent about kind, with the
// quoted server id and tool name and the other values of kv.
func agent(kind localapi.ErrorKind, server, tool string, kv ...string) string {
	v := vars(kv...)
	v["id"], v["server"], v["toolName"] = server, strconv.Quote(server), strconv.Quote(tool)
	return localapi.Fill(localapi.Table.Errors[kind].Agent, v)
}

// Held is what an agent is told about its call of tool (the name it
// called) of server, which is held: the server changed its definition
// after it was first seen, and the person has not accepted the change.
func Held(tool, server string) string { return agent(localapi.ErrorToolHeld, server, tool) }

// LoginRequired says that server needs a sign-in (at step) before a
// call can be sent.
func LoginRequired(server, step string) string {
	return agent(localapi.ErrorLoginRequired, server, "", "step", step)
}

// Permission says that remotemcp may not contact origin, server's, until
// the person approves it.
func Permission(server, origin string) string {
	return agent(localapi.ErrorPermission, server, "", "origin", origin)
}
