package toolsearch

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

var smallDocs = []Doc{
	{Server: "github", Name: "create_issue", Title: "Open new issue", Description: "Create a new issue in a GitHub repository.",
		Params: []Param{{"owner", "Repository owner"}, {"repo", "Repository name"}, {"title", "Issue title"}}},
	{Server: "github", Name: "list_issues", Description: "List issues in a GitHub repository."},
	{Server: "linear", Name: "create_issue", Title: "Create issue", Description: "Create a new Linear issue"},
	{Server: "slack", Name: "slack_post_message", Description: "Post a new message to a Slack channel",
		Params: []Param{{"channel_id", "The ID of the channel"}, {"text", "The message text"}}},
	{Server: "google-calendar", Name: "list-events", Title: "List events", Description: "List events from one or more calendars."},
}

func TestSearchBasics(t *testing.T) {
	ix := New(smallDocs)
	if ix.Len() != len(smallDocs) {
		t.Fatalf("Len = %d", ix.Len())
	}
	for _, c := range []struct {
		q, server, name string
	}{
		{"file a bug in the GitHub repo", "github", "create_issue"},
		{"new Linear ticket", "linear", "create_issue"},
		{"tell the team channel the build is green", "slack", "slack_post_message"},
		{"what meetings do I have tomorrow", "google-calendar", "list-events"},
		{"show the issues in the GitHub repo", "github", "list_issues"},
	} {
		res := ix.Search(c.q, 3)
		if len(res) == 0 || res[0].Server != c.server || res[0].Name != c.name {
			t.Errorf("Search(%q) = %v, want %s/%s first", c.q, res, c.server, c.name)
			continue
		}
		if d := smallDocs[res[0].Doc]; d.Server != res[0].Server || d.Name != res[0].Name {
			t.Errorf("Result.Doc %d does not point at %s/%s", res[0].Doc, res[0].Server, res[0].Name)
		}
	}
	if res := ix.Search("issue", 1); len(res) != 1 {
		t.Errorf("k=1 returned %d results", len(res))
	}
	if res := ix.Search("zzzz qqqq", 5); len(res) != 0 {
		t.Errorf("no shared term, got %v", res)
	}
}

func TestSearchTiesAreDeterministic(t *testing.T) {
	// Identical tools listed out of order: equal scores are ordered by
	// server, then name, then position.
	d := func(server, name string) Doc {
		return Doc{Server: server, Name: name, Description: "Create a ticket in the tracker"}
	}
	ix := New([]Doc{d("zeta", "b"), d("alpha", "b"), d("alpha", "a"), d("alpha", "a")})
	for range 20 {
		res := ix.Search("create ticket", 10)
		if got := fmt.Sprint(res[0].Doc, res[1].Doc, res[2].Doc, res[3].Doc); got != "2 3 1 0" {
			t.Fatalf("tie order = %s, want 2 3 1 0 (%v)", got, res)
		}
		if res[0].Score != res[3].Score {
			t.Fatalf("identical tools scored differently: %v", res)
		}
	}
}

func TestSearchHostileInput(t *testing.T) {
	docs, _ := loadFixture(t)
	// Hostile documents: huge fields, many parameters, NUL bytes, invalid
	// UTF-8 and keyword stuffing sit next to the ordinary ones.
	huge := strings.Repeat("create issue ticket bug ", 200000) // ~4.8 MB
	var many []Param
	for i := range 100000 {
		many = append(many, Param{Name: fmt.Sprintf("p%d_issue", i), Description: huge[:1000]})
	}
	docs = append(docs,
		Doc{Server: "evil", Name: strings.Repeat("create_issue_", 10000), Title: huge, Description: huge, Params: many},
		Doc{Server: "evil\x00", Name: "nul\x00tool", Description: "\x00\x00\xff\xfe invalid \xc3"},
		Doc{},
	)
	ix := New(docs)
	for _, q := range []string{
		"",
		" \t\n",
		"\x00",
		"\xff\xfe\xc3",
		"the of and to a",
		"🙂🙂🙂 ✅",
		"日本語のクエリ",
		"ＣＲＥＡＴＥ ＩＳＳＵＥ",
		strings.Repeat("a", 1<<20),
		strings.Repeat("create issue ", 1<<16),
		strings.Repeat("é", 1<<16),
		strings.Repeat("x-", 1<<16),
		strings.Repeat("word", 300) + " create issue",
	} {
		for _, k := range []int{-1, 0, 1, 3, 1000} {
			res := ix.Search(q, k)
			checkResults(t, ix, q, k, res)
		}
	}
	// The ordinary tool still wins an ordinary query despite the stuffed one.
	res := ix.Search("open a GitHub issue about the crash", 3)
	found := false
	for _, r := range res {
		found = found || (r.Server == "github" && r.Name == "create_issue")
	}
	if !found {
		t.Errorf("github/create_issue not in top 3 next to a stuffed tool: %v", res)
	}
	var nilIndex *Index
	if res := nilIndex.Search("x", 3); res != nil {
		t.Errorf("nil index returned %v", res)
	}
	if res := New(nil).Search("create issue", 3); len(res) != 0 {
		t.Errorf("empty index returned %v", res)
	}
}

// checkResults asserts the invariants of a Search result.
func checkResults(t *testing.T, ix *Index, q string, k int, res []Result) {
	t.Helper()
	short := q
	if len(short) > 40 {
		short = short[:40] + "…"
	}
	if len(res) > max(k, 0) {
		t.Fatalf("Search(%q, %d) returned %d results", short, k, len(res))
	}
	for i, r := range res {
		if r.Doc < 0 || r.Doc >= ix.Len() || ix.servers[r.Doc] != r.Server || ix.names[r.Doc] != r.Name {
			t.Fatalf("Search(%q, %d)[%d] = %+v does not match its document", short, k, i, r)
		}
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || r.Score <= 0 {
			t.Fatalf("Search(%q, %d)[%d] has score %v", short, k, i, r.Score)
		}
		if i > 0 && !less(res[i-1], r) {
			t.Fatalf("Search(%q, %d) not sorted at %d: %+v then %+v", short, k, i, res[i-1], r)
		}
	}
}

func TestSearchConcurrent(t *testing.T) {
	docs, queries := loadFixture(t)
	ix := New(docs)
	want := make([]string, len(queries))
	for i, q := range queries {
		want[i] = fmt.Sprint(ix.Search(q.Query, 5))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range queries {
				j := (i + g*7) % len(queries)
				if got := fmt.Sprint(ix.Search(queries[j].Query, 5)); got != want[j] {
					t.Errorf("query %q: concurrent result differs", queries[j].Query)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzSearch(f *testing.F) {
	f.Add("create an issue in the tracker about the login crash", 3, "create_issue", "Create a new issue")
	f.Add("", 0, "", "")
	f.Add("\x00\xff", -5, "a\x00b", "\xc3")
	f.Add("ＰａｇｅｒＤｕｔｙ on-call re-run PR-12", 1000, "getJiraIssue", "HTTPServer IDs p99")
	f.Add(strings.Repeat("é-", 600), 7, strings.Repeat("xY", 300), "the of a")
	docs, _ := loadFixture(f)
	ix := New(docs)
	f.Fuzz(func(t *testing.T, query string, k int, name, desc string) {
		checkResults(t, ix, query, k, ix.Search(query, k))
		// The fuzzed text as documents too, in every field.
		small := New([]Doc{
			{Server: name, Name: name, Title: desc, Description: desc, Params: []Param{{name, desc}}},
			{Server: "s", Name: desc, Description: query},
			{Server: "s", Name: "create_issue", Description: "Create an issue"},
		})
		checkResults(t, small, query, k, small.Search(query, k))
		checkResults(t, small, desc, k, small.Search(desc, k))
	})
}

func BenchmarkSearch500(b *testing.B) {
	docs, queries := loadFixture(b)
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			New(docs)
		}
		b.ReportMetric(float64(len(docs)), "tools")
	})
	ix := New(docs)
	b.Run("query", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ix.Search(queries[i%len(queries)].Query, 10)
			i++
		}
	})
	b.Run("query-1KiB", func(b *testing.B) {
		q := strings.Repeat("create an issue about the failing payment ", 30)
		b.ReportAllocs()
		for b.Loop() {
			ix.Search(q, 10)
		}
	})
}

// Len reports the number of tools in the index.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	return len(ix.names)
}
