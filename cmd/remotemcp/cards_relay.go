package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/store"
)

// answersNamespace is the store KV namespace through which another
// process hands an answer to the process that holds a pending card
// (`remotemcp elicitations answer`): elicit.Cards.Answer only works in the
// process whose tool call is waiting.
const answersNamespace = "cli_elicitation_answers"

// submission is an answer handed over under answersNamespace/<card id>.
type submission struct {
	Action    elicit.Action  `json:"action"`
	Content   map[string]any `json:"content,omitempty"`
	Submitted time.Time      `json:"submitted"`
	// Error is set by the process holding the card when it refused the
	// answer; the answering process reports it and removes the record.
	Error string `json:"error,omitempty"`
}

// relayPoll is how often a process with an open question looks for an
// answer given by another process.
const relayPoll = 100 * time.Millisecond

// relay runs while a command that may call tools runs: it announces each
// new question of this process (asking inline on a terminal, else saying
// how to answer it), and passes on answers other processes handed over.
func (b *bridge) relay(ctx context.Context) {
	events := b.cards.Subscribe(ctx)
	tick := time.NewTicker(relayPoll)
	defer tick.Stop()
	seen := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case card, ok := <-events:
			if !ok {
				return
			}
			if card.Status == elicit.StatusPending && !seen[card.ID] {
				seen[card.ID] = true
				b.announce(ctx, card)
			}
		case <-tick.C:
			b.takeAnswers(ctx)
		}
	}
}

// announce presents a new question: inline on a terminal; otherwise the
// card stays pending in the store and the call waits for another process
// to answer it.
func (b *bridge) announce(ctx context.Context, card elicit.Card) {
	if b.a.interactive() {
		// A terminal read cannot be interrupted, so the form runs on its
		// own; an answer from elsewhere simply wins the race.
		b.forms.Go(func() { b.askInline(ctx, card) })
		return
	}
	w := b.a.streams.Err
	fmt.Fprintf(w, "server %s asks (its own words): %s\n", cell(card.ServerID), cell(card.Message))
	form, err := card.Form()
	if err == nil {
		for _, f := range orderedFields(form) {
			fmt.Fprintf(w, "  %s\n", fieldLabel(f))
		}
	}
	example := "{}"
	if form != nil {
		example = exampleAnswer(form)
	}
	fmt.Fprintf(w, "waiting for an answer: %s elicitations answer %s accept '%s'\n", b.a.selfCommand(), card.ID, example)
	fmt.Fprintf(w, "  (or: ... answer %s decline | cancel; the call waits until its timeout)\n", card.ID)
}

// selfCommand is how another process reaches this data directory.
func (a *app) selfCommand() string {
	if a.dataDir != "" {
		return "remotemcp --data-dir " + shellQuote(a.dataDir)
	}
	return "remotemcp"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// exampleAnswer is an accept answer with a placeholder for every required
// field without a default.
func exampleAnswer(f *elicit.Form) string {
	var parts []string
	for _, fd := range f.Fields {
		if !fd.Required || fd.Default != nil {
			continue
		}
		var v string
		switch {
		case len(fd.Enum) > 0 && fd.Type == elicit.TypeMultiSelect:
			v = fmt.Sprintf("[%q]", fd.Enum[0])
		case len(fd.Enum) > 0:
			v = fmt.Sprintf("%q", fd.Enum[0])
		case fd.Type == elicit.TypeString:
			v = `"…"`
		case fd.Type == elicit.TypeBoolean:
			v = "true"
		default:
			v = "0"
		}
		parts = append(parts, fmt.Sprintf("%q: %s", fd.Name, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// fieldLabel describes a form field: name, type, required or default,
// choices, and the server's description.
func fieldLabel(f elicit.Field) string {
	var attrs []string
	attrs = append(attrs, string(f.Type))
	if f.Type == elicit.TypeMultiSelect {
		attrs[0] = "list"
	}
	if f.Required {
		attrs = append(attrs, "required")
	}
	if f.Default != nil {
		d, _ := json.Marshal(f.Default)
		attrs = append(attrs, "default "+string(d))
	}
	if len(f.Enum) > 0 {
		attrs = append(attrs, "one of "+strings.Join(f.Enum, ", "))
		if f.Type == elicit.TypeMultiSelect {
			attrs[len(attrs)-1] = "any of " + strings.Join(f.Enum, ", ")
		}
	}
	if f.Format != "" {
		attrs = append(attrs, f.Format)
	}
	s := fmt.Sprintf("%s (%s)", f.Name, strings.Join(attrs, ", "))
	if d := f.Title; d != "" {
		s += ": " + d
	}
	if d := f.Description; d != "" {
		s += " — " + d
	}
	return cell(s)
}

// takeAnswers passes on the answers other processes handed over for this
// process's pending cards.
func (b *bridge) takeAnswers(ctx context.Context) {
	pending := b.cards.Pending()
	if len(pending) == 0 {
		return
	}
	subs, err := b.c.Store.ListKV(ctx, answersNamespace)
	if err != nil || len(subs) == 0 {
		return
	}
	for _, card := range pending {
		raw, ok := subs[card.ID]
		if !ok {
			continue
		}
		var s submission
		if json.Unmarshal(raw, &s) != nil || s.Error != "" {
			continue
		}
		err := b.cards.Answer(ctx, card.ID, elicit.Response{Action: s.Action, Content: s.Content})
		if err != nil && !errors.Is(err, elicit.ErrNotPending) {
			s.Error = err.Error()
			if raw, merr := json.Marshal(s); merr == nil {
				_ = b.c.Store.PutKV(ctx, answersNamespace, card.ID, raw)
			}
			continue
		}
		_ = b.c.Store.DeleteKV(ctx, answersNamespace, card.ID)
		if err == nil {
			fmt.Fprintf(b.a.streams.Err, "card %s answered by another process (%s); the call continues\n", card.ID, s.Action)
		}
	}
}

// storedCard reads one card from the store, without opening the cards
// (which only the process that calls tools does).
func storedCard(ctx context.Context, st *store.SQLite, id string) (elicit.Card, error) {
	raw, err := st.GetKV(ctx, elicit.Namespace, id)
	if errors.Is(err, store.ErrNotFound) {
		return elicit.Card{}, fmt.Errorf("no elicitation card %q (see \"remotemcp elicitations list\")", id)
	}
	if err != nil {
		return elicit.Card{}, fmt.Errorf("read elicitation card %s: %w", id, err)
	}
	var c elicit.Card
	if err := json.Unmarshal(raw, &c); err != nil {
		return elicit.Card{}, fmt.Errorf("elicitation card %s is unreadable: %w", id, err)
	}
	return c, nil
}

// storedCards reads every card, oldest first.
func storedCards(ctx context.Context, st *store.SQLite) ([]elicit.Card, error) {
	all, err := st.ListKV(ctx, elicit.Namespace)
	if err != nil {
		return nil, fmt.Errorf("list elicitation cards: %w", err)
	}
	out := make([]elicit.Card, 0, len(all))
	for key, raw := range all {
		var c elicit.Card
		if json.Unmarshal(raw, &c) == nil && c.ID == key {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
