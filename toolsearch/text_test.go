package toolsearch

import (
	"reflect"
	"strings"
	"testing"
)

func TestStem(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// plurals
		{"issues", "issu"},
		{"issue", "issu"},
		{"replies", "reply"},
		{"statuses", "status"},
		{"status", "status"},
		{"searches", "search"},
		{"boxes", "box"},
		{"addresses", "address"},
		{"access", "access"},
		{"analysis", "analysis"},
		// -ing and -ed, with the final e dropped so all forms agree
		{"create", "creat"},
		{"creates", "creat"},
		{"created", "creat"},
		{"creating", "creat"},
		{"meeting", "meet"},
		{"running", "run"},
		{"mapping", "map"},
		{"billing", "bill"},
		{"added", "add"},
		{"needed", "need"},
		{"speed", "speed"},
		{"string", "string"},
		// short, non-ASCII and mixed words are left alone
		{"pr", "pr"},
		{"ids", "ids"},
		{"p99", "p99"},
		{"café", "café"},
		{"", ""},
		// irregular forms
		{"sent", "send"},
		{"said", "say"},
		{"gave", "giv"},
		{"people", "person"},
	} {
		if got := stem(c.in); got != c.want {
			t.Errorf("stem(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTokenize(t *testing.T) {
	for _, c := range []struct {
		in        string
		doc, qry  []string
		separated bool // qry differs from doc
	}{
		{in: "slack_post_message", doc: []string{"slack", "post", "messag"}},
		{in: "notion-create-pages", doc: []string{"notion", "creat", "pag"}},
		{in: "getJiraIssue", doc: []string{"jira", "issu"}},
		{in: "issueIdOrKey", doc: []string{"issu", "id", "key"}},
		{in: "searchJiraIssuesUsingJql", doc: []string{"search", "jira", "issu", "using", "jql"}},
		{in: "HTTPServer list_IDs", doc: []string{"http", "server", "httpserver", "list", "ids"}, qry: []string{"httpserver", "list", "ids"}},
		{in: "PagerDuty GitHub", doc: []string{"pager", "duty", "pagerduty", "git", "hub", "github"}, qry: []string{"pagerduty", "github"}},
		{in: "Create a new issue in a GitHub repository.", doc: []string{"creat", "new", "issu", "git", "hub", "github", "repository"}, qry: []string{"creat", "new", "issu", "github", "repository"}},
		{in: "I'll check yesterday's logs", doc: []string{"check", "yesterday", "log"}},
		{in: "ENG-88 p99 Q3 SEV-2 10am 2024", doc: []string{"eng", "p99", "q3", "sev", "10am"}},
		{in: "re-run the on-call e-mail", doc: []string{"rerun", "oncall", "email"}},
		{in: "set up a to-do", doc: []string{"setup", "todo"}},
		{in: "ＧｉｔＨｕｂ", doc: []string{"git", "hub", "github"}, qry: []string{"github"}},
		{in: "Ünïcödé naïve CAFÉ", doc: []string{"ünïcödé", "naïve", "café"}},
		{in: "x\x00y a\x00b", doc: []string{}},
		{in: "the of and to", doc: []string{}},
		{in: "", doc: []string{}},
		{in: strings.Repeat("z", 40) + " ok", doc: []string{"ok"}},
	} {
		got := tokenize(c.in, 1<<10, 0)
		if !reflect.DeepEqual(got, c.doc) && !(len(got) == 0 && len(c.doc) == 0) {
			t.Errorf("tokenize(%q) = %q, want %q", c.in, got, c.doc)
		}
		want := c.qry
		if want == nil {
			want = c.doc
		}
		got = tokenizeQuery(c.in, 1<<10, 0)
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("tokenizeQuery(%q) = %q, want %q", c.in, got, want)
		}
	}
}

func TestTokenizeBounds(t *testing.T) {
	long := strings.Repeat("alpha beta ", 10000)
	if got := tokenize(long, 100, 0); len(got) > 20 {
		t.Errorf("read past maxBytes: %d tokens", len(got))
	}
	if got := tokenize(long, 1<<20, 5); len(got) != 5 {
		t.Errorf("maxTokens 5: got %d tokens", len(got))
	}
	// Cutting inside a multi-byte rune must not produce invalid UTF-8.
	for n := 0; n < 8; n++ {
		s := truncate("ééééé", n)
		if !strings.HasPrefix("ééééé", s) || len(s) > n || len(s)%2 != 0 {
			t.Errorf("truncate(%d) = %q", n, s)
		}
	}
	// NFKC can expand a string several times; the result stays bounded.
	if got := splitWords(strings.Repeat("\ufdfa", 300), 100, false); len(strings.Join(got, "")) > 200 {
		t.Errorf("NFKC expansion not bounded: %d bytes", len(strings.Join(got, "")))
	}
}

func TestSynonymsAreGeneral(t *testing.T) {
	// Every group word must survive tokenization as one term, or the group
	// silently does nothing. "get" is a stopword but names tools' verbs.
	for _, line := range strings.Split(synonymGroups+families, "\n") {
		if i := strings.IndexByte(line, ':'); i > 0 {
			line = line[i+1:]
		}
		for _, w := range strings.Fields(line) {
			if got := tokenize(w, 100, 0); (len(got) != 1 || got[0] != stem(w)) && w != "get" {
				t.Errorf("synonym %q tokenizes to %q", w, got)
			}
		}
	}
	for short := range abbreviations {
		if got := tokenizeQuery(short, 100, 0); len(got) != 1 {
			t.Errorf("abbreviation %q tokenizes to %q", short, got)
		}
	}
	if e := expansions[stem("ticket")]; len(e) == 0 {
		t.Error("ticket has no synonyms")
	}
}

func TestIntent(t *testing.T) {
	for _, c := range []struct {
		name string
		want intent
	}{
		{"list_issues", intentRead},
		{"getJiraIssue", intentRead},
		{"slack_post_message", intentWrite},
		{"hubspot-batch-create-objects", intentWrite},
		{"r2_bucket_delete", intentWrite},
		{"accounts_list", intentRead},
		{"query", intentRead},
		{"whoami", intentRead},
		{"get_or_create_label", intentRead},
		{"gdocs_find_replace", intentWrite},
		{"find_and_replace_text", intentWrite},
		{"list_tags", intentRead},
		{"get_comments", intentRead},
		{"notion-fetch", intentRead},
		{"sentry", intentUnknown},
		{"", intentUnknown},
	} {
		if got := toolIntent(c.name); got != c.want {
			t.Errorf("toolIntent(%q) = %d, want %d", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		query string
		want  intent
	}{
		{"what meetings do I have tomorrow", intentRead},
		{"Which deals are stuck?", intentRead},
		{"show me the failing jobs", intentRead},
		{"is the domain free", intentRead},
		{"create an issue about the crash", intentWrite},
		{"please can you post the notes to #eng", intentWrite},
		{"I want to cancel my subscription", intentWrite},
		{"Let's book a call", intentWrite},
		{"find and replace the old name", intentWrite},
		{"find posts about pricing", intentRead},
		{"the login page crashes", intentUnknown},
		{"", intentUnknown},
		{"please", intentUnknown},
	} {
		if got := queryIntent(c.query); got != c.want {
			t.Errorf("queryIntent(%q) = %d, want %d", c.query, got, c.want)
		}
	}
}

// toolIntent classifies a tool as reading or changing.
func toolIntent(name string) intent { return toolAction(name).intent() }

// queryIntent classifies a task as reading or changing.
func queryIntent(query string) intent {
	return queryAction(queryWords(truncate(query, MaxQueryBytes))).intent()
}

// tokenizeQuery is tokenize for a query: a word written as two camelCase
// parts is kept whole only, so "PagerDuty" counts once, as "pagerduty",
// which documents index alongside "pager" and "duty".
func tokenizeQuery(s string, maxBytes, maxTokens int) []string {
	return tokenizeMode(s, maxBytes, maxTokens, true)
}
