package toolsearch

import (
	"reflect"
	"strings"
	"testing"
)

// conceptTerms returns the primary term of each concept of q (the term of
// full concept weight), in concept order.
func conceptTerms(q string) []string {
	pq := parseQuery(q)
	out := make([]string, len(pq.conceptWeight))
	for t, c := range pq.seen {
		out[c] = t
	}
	return out
}

func TestParseQueryEntities(t *testing.T) {
	for _, c := range []struct {
		q            string
		want, absent []string
	}{
		{"give sam@acme.com edit access", []string{"email"}, []string{"sam", "acme", "com"}},
		{"is acme-widgets.dev available to buy", []string{"domain"}, []string{"widget", "dev"}},
		{"tell the #eng channel", []string{"channel"}, []string{"eng"}},
		{"ping @lee about https://x.io/a/b", []string{"user", "link"}, []string{"lee", "io"}},
		{"move PROJ-42 to Done", []string{"issu", "status"}, []string{"proj"}},
		{"delete Friday's 1:1", []string{"meet"}, nil},
		{"make a 15% off code", []string{"percent"}, nil},
		{"change the price to $59", []string{"pric"}, nil},
	} {
		got := conceptTerms(c.q)
		for _, w := range c.want {
			if !contains(got, w) {
				t.Errorf("parseQuery(%q) concepts %q lack %q", c.q, got, w)
			}
		}
		for _, w := range c.absent {
			if contains(got, w) {
				t.Errorf("parseQuery(%q) concepts %q have %q", c.q, got, w)
			}
		}
	}
	// Quoted words count less.
	pq := parseQuery(`tag the page with 'deprecated'`)
	pq.finish()
	for _, q := range pq.terms {
		if q.term == "deprecat" && q.weight >= 1 {
			t.Errorf("quoted word has weight %v", q.weight)
		}
	}
}

func contains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

func TestPhrasals(t *testing.T) {
	for _, c := range []struct{ q, want string }{
		{"roll production back to yesterday's deploy", "rollback production to yesterday deploy"},
		{"gave the money back for the payment", "refund the money for the payment"},
		{"hand PROJ-12 over to Maria", "assign proj to maria"},
		{"who am I logged in as", "who am i login as"},
		{"log 3 hours in Jira", "log hours in jira"},
		{"turn on the auto reply", "enable the autoreply"},
		{"break the task into smaller steps", "split the task smaller steps"},
		{"make a copy of the page", "copy a of the page"},
	} {
		if got := strings.Join(queryWords(c.q), " "); got != c.want {
			t.Errorf("queryWords(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

func TestQueryAction(t *testing.T) {
	for _, c := range []struct {
		q    string
		want action
	}{
		{"how do I cancel my subscription", actDelete},
		{"is there a way to merge two tickets", actUpdate},
		{"tell me why the card was declined", actRead},
		{"tell the team the deploy is done", actWrite},
		{"get back the deck I deleted", actRestore},
		{"file a bug", actCreate},
		{"which tickets are open", actRead},
		{"the login page crashes", actUnknown},
	} {
		if got := queryAction(queryWords(c.q)); got != c.want {
			t.Errorf("queryAction(%q) = %d, want %d", c.q, got, c.want)
		}
	}
	for _, c := range []struct {
		task, tool action
		want       float64
	}{
		{actRead, actRead, 1},
		{actRead, actCreate, intentMismatch},
		{actCreate, actWrite, 1},
		{actCreate, actUpdate, createUpdate},
		{actRestore, actDelete, changeMismatch},
		{actUnknown, actDelete, 1},
	} {
		if got := actionFactor(c.task, c.tool); got != c.want {
			t.Errorf("actionFactor(%d, %d) = %v, want %v", c.task, c.tool, got, c.want)
		}
	}
}

func TestNameTerms(t *testing.T) {
	for _, c := range []struct {
		name, head string
		plural     bool
	}{
		{"create_issue_label", "label", false},
		{"add_comment_to_issue", "comment", false},
		{"addCommentToJiraIssue", "comment", false},
		{"dns_record_create", "record", false},
		{"workers_list", "worker", true},
		{"get_issue_details", "issu", false},
		{"list_issues", "issu", true},
		{"get-product-by-id", "product", false},
		{"whoami", "", false},
	} {
		_, _, head, plural := nameTerms(c.name)
		if head != c.head || plural != c.plural {
			t.Errorf("nameTerms(%q) head %q plural %v, want %q %v", c.name, head, plural, c.head, c.plural)
		}
	}
	terms, weights, _, _ := nameTerms("create_issue_label")
	if !reflect.DeepEqual(terms, []string{"creat", "issu", "label"}) ||
		!reflect.DeepEqual(weights, []float64{roleVerb, roleOther, roleHead}) {
		t.Errorf("nameTerms roles = %q %v", terms, weights)
	}
}

func TestToolAction(t *testing.T) {
	for _, c := range []struct {
		name string
		want action
	}{
		{"list_issues", actRead},
		{"create_issue", actCreate},
		{"editJiraIssue", actUpdate},
		{"gdrive_delete_file", actDelete},
		{"gdrive_restore_file", actRestore},
		{"rollback_deployment", actRestore},
		{"slack_send_dm", actWrite},
		{"r2_bucket_delete", actDelete},
		{"sentry", actUnknown},
	} {
		if got := toolAction(c.name); got != c.want {
			t.Errorf("toolAction(%q) = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSearchSignals checks the ranking signals beyond BM25 on a small
// catalog where each one decides the order.
func TestSearchSignals(t *testing.T) {
	docs := []Doc{
		{Server: "drive", Name: "delete_file", Description: "Move a file to the trash."},
		{Server: "drive", Name: "restore_file", Description: "Restore a file from the trash."},
		{Server: "tracker", Name: "get_issue", Description: "Get one issue by key."},
		{Server: "tracker", Name: "list_issues", Description: "List issues in a project."},
		{Server: "tracker", Name: "create_issue_label", Description: "Create a label for issues."},
		{Server: "tracker", Name: "create_issue", Description: "Create an issue."},
		{Server: "helpdesk", Name: "search_tickets", Description: "Search tickets."},
		{Server: "calendar", Name: "update_event", Description: "Update an event: start, end, attendees."},
		{Server: "calendar", Name: "move_event", Description: "Move an event to another calendar."},
		{Server: "calendar", Name: "list_events", Description: "List events in a time range."},
		{Server: "calendar", Name: "find_meeting_times", Description: "Suggest times when attendees are free."},
	}
	ix := New(docs)
	for _, c := range []struct{ q, want string }{
		{"get back the file I deleted by accident", "restore_file"},    // phrasal verb, action
		{"show the open issues", "list_issues"},                        // plural head
		{"open a new ticket about the crash", "create_issue"},          // head noun over modifier
		{"find tickets about refunds in the tracker", "search_issues"}, // named server
		{"move the standup to 10am", "update_event"},                   // reschedule
	} {
		res := ix.Search(c.q, 3)
		if c.want == "search_issues" {
			// The tracker has no search tool: naming it still ranks its
			// tools above another server's exact match.
			if len(res) == 0 || res[0].Server != "tracker" {
				t.Errorf("Search(%q) = %v, want a tracker tool first", c.q, res)
			}
			continue
		}
		if len(res) == 0 || res[0].Name != c.want {
			t.Errorf("Search(%q) = %v, want %s first", c.q, res, c.want)
		}
	}
}

func TestIdioms(t *testing.T) {
	has := func(q, term string) bool {
		_, ok := parseQuery(q).byTerm[stem(term)]
		return ok
	}
	for _, c := range []struct {
		query, term string
		want        bool
	}{
		{"bring pull request 97 up to date with main", "update", true},
		{"bring pull request 97 up to date with main", "show", false},
		{"bring up the last invoice", "show", true},
		{"who can see the budget sheet", "permission", true},
		{"tack the numbers onto the sheet", "append", true},
		{"automatically label mail from the bank", "automation", true},
		{"what did the doc look like before yesterday's edits", "version", true},
	} {
		if got := has(c.query, c.term); got != c.want {
			t.Errorf("parseQuery(%q) has %q = %v, want %v", c.query, c.term, got, c.want)
		}
	}
	if a := parseQuery("from now on, automatically label mail from the bank").action; a != actCreate {
		t.Errorf("automation task action = %d, want create", a)
	}
	pq := parseQuery("page the db team: replication is failing")
	if q := pq.byTerm[stem("replication")]; q == nil || q.weight != quotedWeight {
		t.Errorf("payload after a colon: %+v, want weight %v", q, quotedWeight)
	}
}

// toolAction classifies a tool by the first verb in its name.
func toolAction(name string) action {
	a, _ := toolVerb(name)
	return a
}

// queryWords returns the lower-cased words of a query, with compounds
// joined and phrasal verbs rewritten, but entities and stopwords kept.
func queryWords(q string) []string {
	return plainWords(phrasals(splitQuoted(q)))
}
