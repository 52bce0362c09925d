package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/store"
)

// answerWait bounds how long `elicitations answer` waits for the process
// that asked to take the answer (it looks every relayPoll).
const answerWait = 15 * time.Second

func newElicitationsAnswerCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "answer ID accept [CONTENT_JSON] | decline | cancel",
		Short: "Answer a question a server asked during a tool call",
		Long: `Answer a pending card (see "elicitations list"): accept with the content
the server asked for, as a JSON object checked against the requested form
(fields left out take their defaults), or decline, or cancel. The answer
goes to the remotemcp process whose call is waiting, and the call goes on
there.`,
		Example: `  remotemcp elicitations answer el-ABC accept '{"name": "Ada"}'
  remotemcp elicitations answer el-ABC decline`,
		Args: argsRange(2, 3, "ID accept [CONTENT_JSON] | decline | cancel"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, action := args[0], elicit.Action(strings.ToLower(args[1]))
			var content map[string]any
			switch action {
			case elicit.ActionAccept:
				raw := "{}"
				if len(args) == 3 {
					raw = args[2]
				}
				var err error
				if content, err = parseContent(raw); err != nil {
					return err
				}
			case elicit.ActionDecline, elicit.ActionCancel:
				if len(args) == 3 {
					return usageErrorf("%s takes no content; only accept does", action)
				}
			default:
				return usageErrorf("the answer must be accept, decline or cancel, got %q", args[1])
			}
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				// The daemon owns the cards of the calls it makes.
				if err := dc.Answer(ctx, id, elicit.Response{Action: action, Content: content}); err != nil {
					return fmt.Errorf("answer %s: %w", id, err)
				}
				fmt.Fprintf(a.streams.Err, "answered %s (%s) through the daemon\n", id, action)
				return nil
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			card, err := storedCard(ctx, c.Store, id)
			if err != nil {
				return err
			}
			if err := checkAnswerable(ctx, c.Store, card); err != nil {
				return err
			}
			if action == elicit.ActionAccept {
				form, err := card.Form()
				if err != nil {
					return fmt.Errorf("card %s: the server's form cannot be read: %w", id, err)
				}
				if _, err := form.Validate(content); err != nil {
					return fmt.Errorf("card %s: %w; the form's fields: %s", id, err, formFields(form))
				}
			}
			raw, err := json.Marshal(submission{Action: action, Content: content, Submitted: time.Now().UTC()})
			if err != nil {
				return err
			}
			if err := c.Store.PutKV(ctx, answersNamespace, id, raw); err != nil {
				return fmt.Errorf("hand the answer over: %w", err)
			}
			fmt.Fprintf(a.streams.Err, "handing the answer to the process that asked…\n")
			st, err := awaitTaken(ctx, c.Store, card)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Out, "answered %s: %s\n", id, st)
			return nil
		},
	}
}

// parseContent reads CONTENT_JSON: one JSON object.
func parseContent(raw string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(strings.TrimSpace(raw))))
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		why := "not a JSON object"
		if err != nil {
			why = err.Error()
		}
		return nil, usageErrorf(`CONTENT_JSON must be one JSON object such as '{"name": "Ada"}' (%s)`, why)
	}
	return m, nil
}

// checkAnswerable refuses a card that no waiting call can use.
func checkAnswerable(ctx context.Context, st *store.SQLite, card elicit.Card) error {
	retry := fmt.Sprintf("if running the tool again is safe, re-send the call with \"remotemcp elicitations retry %s\"", card.ID)
	switch card.Status {
	case elicit.StatusPending:
		if !ownerAlive(ctx, st, card.Owner) {
			return fmt.Errorf("card %s cannot be answered: %s; %s", card.ID, reasonGonePending, retry)
		}
		return nil
	case elicit.StatusInterrupted:
		return fmt.Errorf("card %s is interrupted (%s), so an answer can no longer reach the server; %s", card.ID, cell(card.Reason), retry)
	}
	return fmt.Errorf("card %s is %s already; there is nothing to answer", card.ID, card.Status)
}

// formFields describes a form's fields for an error message.
func formFields(f *elicit.Form) string {
	if len(f.Fields) == 0 {
		return "none"
	}
	parts := make([]string, len(f.Fields))
	for i, fd := range orderedFields(f) {
		parts[i] = fieldLabel(fd)
	}
	return strings.Join(parts, "; ")
}

// awaitTaken waits until the process holding the card took the answer
// (the card left pending) or refused it, and returns the card's new
// status. An answer nobody took is withdrawn.
func awaitTaken(ctx context.Context, st *store.SQLite, card elicit.Card) (elicit.Status, error) {
	withdraw := func() { _ = st.DeleteKV(context.WithoutCancel(ctx), answersNamespace, card.ID) }
	deadline := time.Now().Add(answerWait)
	tick := time.NewTicker(relayPoll / 2)
	defer tick.Stop()
	for i := 0; ; i++ {
		now, err := storedCard(ctx, st, card.ID)
		if err != nil {
			return "", err
		}
		if now.Status != elicit.StatusPending {
			if now.Response == nil {
				return "", fmt.Errorf("card %s was closed before the answer arrived: %s (%s)", card.ID, now.Status, cell(now.Reason))
			}
			return now.Status, nil
		}
		if raw, err := st.GetKV(ctx, answersNamespace, card.ID); err == nil {
			var s submission
			if json.Unmarshal(raw, &s) == nil && s.Error != "" {
				withdraw()
				return "", fmt.Errorf("card %s: the process that asked refused the answer: %s", card.ID, cell(s.Error))
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		if i%10 == 9 && !ownerAlive(ctx, st, card.Owner) {
			withdraw()
			return "", fmt.Errorf("card %s: the process that asked ended before it took the answer; nothing was answered", card.ID)
		}
		if time.Now().After(deadline) {
			withdraw()
			if now, err := storedCard(ctx, st, card.ID); err == nil && now.Status != elicit.StatusPending && now.Response != nil {
				return now.Status, nil
			}
			return "", fmt.Errorf("card %s: the process that asked did not take the answer within %s; nothing was answered, try again", card.ID, answerWait)
		}
		select {
		case <-ctx.Done():
			withdraw()
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}
