package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/elicit"
)

// askInline answers a card at the terminal: the server's message, then
// accept / decline / cancel, then each field of the requested schema with
// its default shown. An answer the form refuses is asked again, field by
// field; no input (end of file) cancels.
func (b *bridge) askInline(ctx context.Context, card elicit.Card) {
	a := b.a
	w := a.streams.Err
	fmt.Fprintf(w, "\nserver %s asks (its own words): %s\n", cell(card.ServerID), text(card.Message))
	form, err := card.Form()
	if err != nil {
		fmt.Fprintf(w, "the question cannot be shown as a form (%s); declining it\n", cell(err.Error()))
		b.answerInline(ctx, card.ID, elicit.Response{Action: elicit.ActionDecline})
		return
	}
	action, ok := a.askAction()
	if ctx.Err() != nil {
		return // the command ended meanwhile
	}
	if !ok || action != elicit.ActionAccept {
		if !ok {
			fmt.Fprintln(w, "no answer (end of input): cancelling the question")
			action = elicit.ActionCancel
		}
		b.answerInline(ctx, card.ID, elicit.Response{Action: action})
		return
	}
	content := map[string]any{}
	ask := orderedFields(form)
	for {
		for _, f := range ask {
			v, ok := a.askField(f)
			if ctx.Err() != nil {
				return
			}
			if !ok {
				fmt.Fprintln(w, "no answer (end of input): cancelling the question")
				b.answerInline(ctx, card.ID, elicit.Response{Action: elicit.ActionCancel})
				return
			}
			if v == nil {
				delete(content, f.Name)
			} else {
				content[f.Name] = v
			}
		}
		_, err := form.Validate(content)
		var ve *elicit.ValidationError
		if !errors.As(err, &ve) {
			break
		}
		fmt.Fprintf(w, "%s; please answer again:\n", cell(err.Error()))
		ask = slices.DeleteFunc(orderedFields(form), func(f elicit.Field) bool {
			return !slices.ContainsFunc(ve.Problems, func(p elicit.FieldProblem) bool { return p.Field == f.Name })
		})
	}
	b.answerInline(ctx, card.ID, elicit.Response{Action: elicit.ActionAccept, Content: content})
}

// orderedFields are a form's fields, required ones first (the server's
// order is lost on the way: go-sdk hands the schema over as a map).
func orderedFields(f *elicit.Form) []elicit.Field {
	out := slices.Clone(f.Fields)
	slices.SortStableFunc(out, func(x, y elicit.Field) int {
		switch {
		case x.Required == y.Required:
			return 0
		case x.Required:
			return -1
		}
		return 1
	})
	return out
}

// answerInline gives the terminal's answer to the card.
func (b *bridge) answerInline(ctx context.Context, id string, r elicit.Response) {
	err := b.cards.Answer(ctx, id, r)
	switch {
	case errors.Is(err, elicit.ErrNotPending):
		fmt.Fprintf(b.a.streams.Err, "card %s was already answered or closed; your answer was not used\n", id)
	case err != nil:
		fmt.Fprintf(b.a.streams.Err, "card %s: the answer was not accepted: %s\n", id, cell(err.Error()))
	}
}

// askAction asks accept, decline or cancel (default accept). ok is false
// at the end of input.
func (a *app) askAction() (elicit.Action, bool) {
	for {
		fmt.Fprint(a.streams.Err, "answer with accept, decline or cancel? [accept] ")
		line, err := a.readLine()
		if err != nil {
			return "", false
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "a", "accept", "y", "yes":
			return elicit.ActionAccept, true
		case "d", "decline", "n", "no":
			return elicit.ActionDecline, true
		case "c", "cancel":
			return elicit.ActionCancel, true
		}
	}
}

// askField asks one field. An empty line leaves the field out (its
// default applies; a required field without one is asked again). The
// value is what the person typed, as a string (the form converts numbers
// and booleans), or a list for multi-select fields.
func (a *app) askField(f elicit.Field) (any, bool) {
	for {
		prompt := "  " + fieldLabel(f)
		if f.Default != nil {
			d, _ := json.Marshal(f.Default)
			prompt += fmt.Sprintf(" [%s]", cell(string(d)))
		}
		fmt.Fprint(a.streams.Err, prompt+": ")
		line, err := a.readLine()
		if err != nil {
			return nil, false
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "" && f.Required && f.Default == nil:
			fmt.Fprintf(a.streams.Err, "  %s is required\n", f.Name)
			continue
		case line == "":
			return nil, true
		case f.Type == elicit.TypeMultiSelect:
			var items []any
			for s := range strings.SplitSeq(line, ",") {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
			return items, true
		}
		return line, true
	}
}
