package ask

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

// /dev/null is a character device but nobody types on it.
func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if (&Terminal{In: f}).Interactive() {
		t.Fatal("/dev/null counts as a terminal")
	}
	if !(&Terminal{In: strings.NewReader(""), Forced: true}).Interactive() {
		t.Fatal("Forced is ignored")
	}
	if (&Terminal{In: strings.NewReader("y\n")}).Interactive() {
		t.Fatal("a reader counts as a terminal")
	}
}

func TestYesNo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
		err  string
	}{
		{"y\n", true, "go? [y/N] "},
		{" YES \n", true, "go? [y/N] "},
		{"yes", true, "go? [y/N] "}, // the last line needs no newline
		{"n\n", false, "go? [y/N] "},
		{"sure\n", false, "go? [y/N] "},
		{"", false, "go? [y/N] \n"}, // no answer is a no
	} {
		var errw strings.Builder
		term := &Terminal{In: strings.NewReader(tc.in), Err: &errw}
		if got := term.YesNo("go?"); got != tc.want || errw.String() != tc.err {
			t.Errorf("YesNo with %q = %v, stderr %q; want %v, %q", tc.in, got, errw.String(), tc.want, tc.err)
		}
	}
}

// Lines typed ahead are not lost between two prompts.
func TestLinesShareOneReader(t *testing.T) {
	term := &Terminal{In: strings.NewReader("first\n  second  \n")}
	for _, want := range []string{"first", "second"} {
		if got, err := term.Line(); got != want || err != nil {
			t.Fatalf("Line = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := term.Line(); err == nil {
		t.Fatal("Line after the end of input: no error")
	}
}

// answers records the answers and refuses the first with problems.
type answers struct {
	got      []localapi.Answer
	problems []localapi.FieldProblem
}

func (a *answers) Answer(_ context.Context, _ string, ans localapi.Answer) error {
	ans.Content = maps.Clone(ans.Content) // Question fills the same map again
	a.got = append(a.got, ans)
	if len(a.got) == 1 && len(a.problems) > 0 {
		return &localapi.Error{Code: localapi.CodeBadRequest, Message: "invalid answer", Problems: a.problems}
	}
	return nil
}

func TestQuestion(t *testing.T) {
	form := &localapi.Form{Fields: []localapi.Field{
		{Name: "name", Type: "string", Required: true},
		{Name: "age", Type: "integer"},
		{Name: "tags", Type: "array"},
	}}
	for _, tc := range []struct {
		name     string
		in       string
		problems []localapi.FieldProblem
		want     []localapi.Answer
	}{
		{"accept", "\nAda\n42\na, b,\n", nil,
			[]localapi.Answer{{Action: "accept", Content: map[string]any{"name": "Ada", "age": "42", "tags": []any{"a", "b"}}}}},
		{"required asked again, optional left out", "a\n\nAda\n\n\n", nil,
			[]localapi.Answer{{Action: "accept", Content: map[string]any{"name": "Ada"}}}},
		{"refused field asked again", "accept\nAda\nold\n\n41\n", []localapi.FieldProblem{{Field: "age", Problem: "not a number"}},
			[]localapi.Answer{{Action: "accept", Content: map[string]any{"name": "Ada", "age": "old"}}, {Action: "accept", Content: map[string]any{"name": "Ada", "age": "41"}}}},
		{"decline", "what\nno\n", nil, []localapi.Answer{{Action: "decline"}}},
		{"end of input cancels", "accept\nAda\n", nil, []localapi.Answer{{Action: "cancel"}}},
		{"nothing typed cancels", "", nil, []localapi.Answer{{Action: "cancel"}}},
	} {
		var errw strings.Builder
		a := &answers{problems: tc.problems}
		(&Terminal{In: strings.NewReader(tc.in), Err: &errw}).Question(t.Context(), a, localapi.Card{ID: "el-1", ServerID: "fx", Message: "who\x1b[2J?", Form: form})
		if !reflect.DeepEqual(a.got, tc.want) {
			t.Errorf("%s: answers %#v, want %#v\n%s", tc.name, a.got, tc.want, errw.String())
		}
		if !strings.Contains(errw.String(), "server fx asks (its own words): who\uFFFD[2J?") {
			t.Errorf("%s: the question is not shown safely:\n%s", tc.name, errw.String())
		}
	}
}

func TestFieldLabelAndExample(t *testing.T) {
	form := &localapi.Form{Fields: []localapi.Field{
		{Name: "name", Type: "string", Required: true, Title: "Name", Description: "who\nyou are"},
		{Name: "color", Type: "string", Required: true, Enum: []string{"red", "blue"}},
		{Name: "tags", Type: "array", Required: true, Enum: []string{"a"}},
		{Name: "ok", Type: "boolean", Required: true},
		{Name: "n", Type: "integer", Required: true},
		{Name: "when", Type: "string", Format: "date", Default: "today", Required: true},
	}}
	labels := []string{
		"name (string, required): Name — who you are",
		"color (string, required, one of red, blue)",
		"tags (list, required, any of a)",
		"ok (boolean, required)",
		"n (integer, required)",
		`when (string, required, default "today", date)`,
	}
	for i, f := range form.Fields {
		if got := FieldLabel(f); got != labels[i] {
			t.Errorf("FieldLabel(%s) = %q, want %q", f.Name, got, labels[i])
		}
	}
	if got, want := ExampleAnswer(form), `{"name": "…", "color": "red", "tags": ["a"], "ok": true, "n": 0}`; got != want {
		t.Errorf("ExampleAnswer = %s, want %s", got, want)
	}
}

// Without a terminal a question is printed with the command that
// answers it.
func TestPresentWithoutTerminal(t *testing.T) {
	var errw strings.Builder
	q := &Questions{T: &Terminal{In: strings.NewReader(""), Err: &errw}, E: &answers{}, Self: "remotemcp --data-dir '/a b'"}
	q.Present(t.Context(), localapi.Card{ID: "el-1", ServerID: "fx", Message: "name?", Form: &localapi.Form{Fields: []localapi.Field{{Name: "name", Type: "string", Required: true}}}})
	q.Wait()
	want := "server fx asks (its own words): name?\n  name (string, required)\n" +
		"waiting for an answer: remotemcp --data-dir '/a b' elicitations answer el-1 accept '{\"name\": \"…\"}'\n" +
		"  (or: ... answer el-1 decline | cancel; the call waits until its timeout)\n"
	if errw.String() != want {
		t.Errorf("stderr:\n%s\nwant\n%s", errw.String(), want)
	}
}

// feed is a Subscriber whose events the test sends.
type feed chan localapi.Event

func (f feed) Subscribe(context.Context) (<-chan localapi.Event, error) { return f, nil }

// Watch presents each matching pending question once, whatever the
// events repeat, and stop returns once the feed ends.
func TestWatch(t *testing.T) {
	var errw strings.Builder
	q := &Questions{T: &Terminal{In: strings.NewReader(""), Err: &errw}, E: &answers{}, Self: "remotemcp"}
	events := make(feed)
	stop := q.Watch(t.Context(), events, func(c localapi.Card) bool { return c.ServerID == "fx" })
	cards := func(cs ...localapi.Card) localapi.Event {
		data, err := json.Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		return localapi.Event{Type: localapi.EventCards, Data: data}
	}
	mine := localapi.Card{ID: "el-1", ServerID: "fx", Message: "name?", Status: localapi.CardPending}
	other := localapi.Card{ID: "el-2", ServerID: "other", Message: "no", Status: localapi.CardPending}
	done := localapi.Card{ID: "el-3", ServerID: "fx", Message: "old", Status: localapi.CardCancelled}
	events <- cards(mine, other, done)
	events <- localapi.Event{Type: "servers", Data: []byte(`[]`)}
	events <- cards(mine)
	close(events)
	stop()
	if got := strings.Count(errw.String(), "asks (its own words)"); got != 1 || !strings.Contains(errw.String(), "server fx asks (its own words): name?") {
		t.Fatalf("presented %d questions:\n%s", got, errw.String())
	}
}
