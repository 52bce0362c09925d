package toolsearch

import (
	"math/bits"
	"regexp"
	"sort"
	"strings"
)

// qterm is one weighted term of a parsed query. concepts has a bit set for
// each concept of the query the term stands for: a word of the query, one
// of its synonyms, or a thing recognised in it (an email address stands
// for "email").
type qterm struct {
	term     string
	weight   float64
	concepts uint64
	group    int  // the first concept, under which the term is scored
	plural   bool // the word it stands for is plural
}

// parsedQuery is a query ready to be scored.
type parsedQuery struct {
	terms []qterm // sorted by concept and term, so scores add up in the same order
	// conceptWeight is how much each concept counts when a tool's score
	// is scaled by the share of the query it matches.
	conceptWeight []float64
	totalWeight   float64
	action        action
	// bigrams are adjacent terms of the query, which earn a bonus where a
	// tool's name or title has them adjacent too.
	bigrams []string
	// verbConcept is the concept of the task's leading verb when that is
	// a generic verb ("add", "show"), or -1. A tool whose action is the
	// task's counts as matching it.
	verbConcept int
	// verbs are the stem of the task's leading verb and its synonyms,
	// with their weights.
	verbs map[string]float64
	// listing is set when the task reads several things ("meetings
	// tomorrow", "the last commits"), which favours list and search tools
	// over tools that get one thing.
	listing bool
	// names are capitalised words after verbs such as "invite" or "DM"
	// that may name a person (see Index.Search).
	names []string

	byTerm map[string]*qterm
	seen   map[string]int // concepts by their term
}

// maxConcepts is how many concepts a query can have (a uint64 bit each).
const maxConcepts = 64

// Weights of the concepts a query implies rather than says.
const (
	entityWeight  = 0.5 // "sam@acme.com" stands for "email"
	quotedWeight  = 0.5 // words in quotes are usually values, not vocabulary
	verbAltWeight = 0.5
)

// entities finds things in a task that say what kind of object it is
// about even though the word is not used: email addresses, links, domain
// names, Slack-style #channels and @mentions. Their text itself is no
// vocabulary and is not searched for.
var entities = regexp.MustCompile(`(?i)` +
	`(?P<email>[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})` +
	`|(?P<url>https?://[^\s]+)` +
	`|(?P<domain>\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|org|net|io|dev|app|co|ai|us|uk|de|fr|eu|info|biz|xyz|cloud|site|tech|sh|so|gg|me)\b)` +
	`|(?P<channel>(?:^|[\s(])#[a-z][a-z0-9_.-]*)` +
	`|(?P<mention>(?:^|[\s(])@[a-z][a-z0-9_.-]*)` +
	`|(?P<meeting>\b(?:1:1|1-on-1|one-on-one)s?\b)` +
	`|(?P<price>(?:[$€£]\s?\d[\d,.]*[kKmM]?\b)|\b\d[\d,.]*\s?(?:usd|eur|gbp|dollars|euros)\b)` +
	`|(?P<percent>\b\d+(?:\.\d+)?\s?%)` +
	`|(?P<quoted>(?:^|[\s(:])(?:"[^"]{1,120}"|'[^']{1,120}'|\x{201c}[^\x{201d}]{1,120}\x{201d}|\x{2018}[^\x{2019}]{1,120}\x{2019})(?:$|[\s.,;:!?)]))`)

// mayHaveTime is a cheap test that timeOfDay may match.
func mayHaveTime(s string) bool {
	l := strings.ToLower(s)
	if strings.ContainsAny(s, "0123456789") &&
		(strings.Contains(l, "am") || strings.Contains(l, "pm") || strings.Contains(l, "at ") || strings.IndexByte(s, ':') >= 0) {
		return true
	}
	return strings.Contains(l, "noon") || strings.Contains(l, "midnight")
}

// mayHaveEntity is a cheap test that the entities pattern may match.
func mayHaveEntity(s string) bool {
	if strings.ContainsAny(s, "@#:$%\"\u201c\u2018\u20ac\u00a3") {
		return true
	}
	for i := 0; i+1 < len(s); i++ {
		switch {
		case s[i] == '.' && isASCIILetters(strings.ToLower(s[i+1:i+2])): // a domain
			return true
		case s[i+1] == '\'' && strings.IndexByte(" \t\n\r\f\v(", s[i]) >= 0: // an opening quote
			return true
		}
	}
	if s != "" && s[0] == '\'' {
		return true
	}
	l := strings.ToLower(s)
	for _, w := range []string{"usd", "eur", "gbp", "dollar", "euro", "1-on-1", "one-on-one"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// entityTerms are the words an entity stands for.
var entityTerms = map[string]string{
	"email":   "email",
	"url":     "link",
	"domain":  "domain",
	"channel": "channel",
	"mention": "user",
	"meeting": "meeting",
	"price":   "price",
	"percent": "percent",
}

// issueKey matches tracker keys such as "PROJ-42" or "BACKEND-7K", which
// say that the task is about an issue even when the word is not used.
var issueKey = regexp.MustCompile(`\b[A-Z][A-Z0-9]{1,9}-[A-Z0-9]*[0-9][A-Z0-9]*\b`)

// qword is a word of a query before stemming. alt is a word it was
// rewritten from ("restore" from "get … back"), searched for at a lower
// weight.
type qword struct {
	w, alt string
	quoted bool
	plural bool // the word is a plural noun, or follows "all", "every", …
	rule   bool // the word is what an automation does ("automatically label")
	colon  bool // a break made by a colon
}

// automationWords say that a task sets up something that acts on its own
// ("automatically", "from now on", "whenever"); automation returns the
// position of the last of them, or -1.
var automationWords = setOf(`automatically auto automate whenever`)

func automation(words []qword) int {
	at := -1
	for i, w := range words {
		switch {
		case automationWords[w.w],
			w.w == "on" && i >= 2 && words[i-1].w == "now" && words[i-2].w == "from",
			w.w == "time" && i >= 1 && (words[i-1].w == "every" || words[i-1].w == "each") && i+1 < len(words) && words[i+1].w != "":
			at = i
		}
	}
	return at
}

// add adds term to a concept of the query at weight w.
func (pq *parsedQuery) add(term string, w float64, concept int, plural bool) {
	q := pq.byTerm[term]
	if q == nil {
		q = &qterm{term: term}
		pq.byTerm[term] = q
	}
	if w > q.weight {
		q.weight, q.plural = w, plural
	}
	q.concepts |= 1 << concept
}

// concept adds a concept for term, with its expansions, unless the query
// has it already; it reports false when the query has as many concepts as
// it can.
func (pq *parsedQuery) concept(term string, w float64, plural bool) bool {
	if _, dup := pq.seen[term]; dup {
		return true
	}
	if len(pq.conceptWeight) >= maxConcepts {
		return false
	}
	pq.conceptWeight = append(pq.conceptWeight, w)
	pq.totalWeight += w
	c := len(pq.conceptWeight) - 1
	pq.seen[term] = c
	pq.add(term, w, c, plural)
	for _, e := range expansions[term] {
		pq.add(e.term, w*e.weight, c, plural)
	}
	return true
}

// finish sorts the terms of the query.
func (pq *parsedQuery) finish() {
	pq.terms = make([]qterm, 0, len(pq.byTerm))
	for _, q := range pq.byTerm {
		q.group = bits.TrailingZeros64(q.concepts)
		pq.terms = append(pq.terms, *q)
	}
	sortTerms(pq.terms)
}

// parseQuery analyses a query: its weighted terms and concepts, its
// action, bigrams and whether it reads a list. Search completes it and
// calls finish.
func parseQuery(query string) *parsedQuery {
	query = truncate(query, MaxQueryBytes)
	pq := &parsedQuery{verbConcept: -1, byTerm: map[string]*qterm{}, seen: map[string]int{}}
	text, ents := cutEntities(query)
	if len(text) > 1 && strings.ContainsAny(text[1:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		for _, m := range personAfter.FindAllStringSubmatch(text, 4) {
			pq.names = append(pq.names, strings.ToLower(m[1]))
		}
	}
	words := phrasals(splitQuoted(text))
	plain := plainWords(words)
	pq.action = queryAction(plain)
	lead := leadWord(words, plain)
	auto := automation(words)
	if auto >= 0 {
		// "automatically label mail from X": the task sets up a rule;
		// labelling is what the rule does, not the tool's action.
		pq.action = actCreate
		if lead >= 0 && lead <= auto+1 {
			lead = -1
		}
		if auto+1 < len(words) && verbAction(stem(words[auto+1].w)) != actUnknown {
			words[auto+1].rule = true
		}
	}
	markWords(words, lead, text)
	markPayload(words, lead)
	pq.addWords(words, lead)
	if auto >= 0 {
		pq.concept(stem("automation"), entityWeight, false)
	}
	for _, e := range ents {
		pq.concept(stem(e), entityWeight, false)
	}
	for _, e := range impliedConcepts(plain) {
		pq.concept(stem(e), entityWeight, false)
	}
	return pq
}

// cutEntities cuts the entities out of a query and returns the rest and
// the words they stand for. Quoted text is kept between \x01 and \x02.
func cutEntities(query string) (string, []string) {
	var ents []string
	var rest strings.Builder
	last := 0
	names := entities.SubexpNames()
	var found [][]int
	if mayHaveEntity(query) {
		found = entities.FindAllStringSubmatchIndex(query, MaxQueryTerms)
	}
	for _, m := range found {
		for g := 1; g < len(names); g++ {
			if m[2*g] < 0 {
				continue
			}
			rest.WriteString(query[last:m[0]])
			rest.WriteString(" ")
			if names[g] == "quoted" {
				rest.WriteString("\x01 ")
				rest.WriteString(query[m[2*g]:m[2*g+1]])
				rest.WriteString(" \x02")
			} else {
				ents = append(ents, entityTerms[names[g]])
			}
			last = m[1]
			break
		}
	}
	rest.WriteString(query[last:])
	text := rest.String()
	if strings.IndexByte(text, '-') >= 0 && issueKey.MatchString(text) {
		ents = append(ents, "issue")
		text = issueKey.ReplaceAllLiteralString(text, " ")
	}
	return text, ents
}

// leadWord returns the position in words of the task's verb: the first
// word after any how-to opening and lead-in, or -1.
func leadWord(words []qword, plain []string) int {
	skip := len(plain) - len(skipHowTo(plain))
	for i, qw := range words {
		if qw.w == "" {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if !leadIn[qw.w] {
			return i
		}
	}
	return -1
}

// markWords marks the nouns after quantifiers plural ("every bug") and
// rewrites the task's verb when a time says what it means: "move the
// standup to 10am" reschedules it, "send the reminder tomorrow" schedules
// it.
func markWords(words []qword, lead int, text string) {
	hasTime := mayHaveTime(text) && timeOfDay.MatchString(text)
	hasFuture := hasTime
	for i, w := range words {
		hasTime = hasTime || timeWords[w.w]
		hasFuture = hasFuture || futureWords[w.w]
		if quantifiers[w.w] {
			for j := i + 1; j < len(words) && j <= i+3; j++ {
				words[j].plural = true
			}
		}
	}
	if lead < 0 {
		return
	}
	if hasTime && moveVerbs[words[lead].w] {
		words[lead].alt, words[lead].w = words[lead].w, "reschedule"
	}
	if hasFuture && sendVerbs[words[lead].w] && words[lead].alt == "" {
		words[lead].alt = "schedule"
	}
}

// payloadVerbs send what follows a colon: in "page the db team:
// replication is failing" the words after the colon are the message, not
// a description of the tool.
var payloadVerbs = setOf(`send post message email mail tell ping page notify alert text dm reply
	comment announce say write`)

// markPayload marks the words after a colon that follows a task's
// sending verb as quoted.
func markPayload(words []qword, lead int) {
	if lead < 0 || !(payloadVerbs[words[lead].w] || payloadVerbs[words[lead].alt]) {
		return
	}
	for i := lead + 1; i < len(words); i++ {
		if words[i].colon {
			for j := i + 1; j < len(words); j++ {
				words[j].quoted = true
			}
			return
		}
	}
}

// addWords adds a concept for each word of the query, and its bigrams.
func (pq *parsedQuery) addWords(words []qword, lead int) {
	var prev string
	sawAux := false
	for i, qw := range words {
		w := qw.w
		if w == "" { // a break: punctuation or quote boundary
			prev = ""
			continue
		}
		sawAux = sawAux || auxiliaries[w]
		if w == "my" || w == "me" {
			pq.addMy()
			continue
		}
		if stopwords[w] || len(w) < 2 {
			continue
		}
		t := stem(w)
		if r, ok := leadRewrite[t]; ok && i == lead {
			// A task that starts "file a bug" is not about files.
			if r.replace {
				// The first word replaces the task's; any others are
				// alternatives.
				to, rest, _ := strings.Cut(r.to, " ")
				t, qw.alt = stem(to), rest
			} else {
				qw.alt = r.to
			}
		}
		if !qw.quoted && prev != "" && prev != t {
			pq.bigrams = append(pq.bigrams, prev+" "+t)
		}
		prev = t
		if qw.quoted {
			prev = ""
		}
		if _, dup := pq.seen[t]; dup {
			continue
		}
		cw := 1.0
		if qw.quoted {
			cw = quotedWeight
		}
		if qw.rule || i != lead && i > 0 && qw.alt == "" && (pastChange(w) && !questionWords[words[i-1].w] ||
			pq.action == actRead && sawAux && verbAction(t).intent() == intentWrite) {
			// "bugs assigned to me", "what did they write": a state or
			// what is asked about, not the action.
			cw *= participleWeight
		}
		plural := qw.plural || isPlural(w)
		if !pq.concept(t, cw, plural) {
			return
		}
		if i == lead {
			pq.addVerb(t, cw)
		}
		for _, alt := range strings.Fields(qw.alt) {
			if stopwords[alt] {
				continue
			}
			c, a := pq.seen[t], stem(alt)
			pq.add(a, cw*verbAltWeight, c, plural)
			for _, e := range expansions[a] {
				pq.add(e.term, cw*verbAltWeight*e.weight, c, plural)
			}
		}
		pq.listing = pq.listing || timeWords[w]
	}
}

// addMy adds "my" and "me" as a concept that does not count in the share
// of the task a tool matches: "my tasks", "assigned to me" are a hint,
// not a requirement.
func (pq *parsedQuery) addMy() {
	if _, dup := pq.seen["my"]; dup || len(pq.conceptWeight) >= maxConcepts {
		return
	}
	pq.conceptWeight = append(pq.conceptWeight, 0)
	c := len(pq.conceptWeight) - 1
	pq.seen["my"] = c
	pq.add("my", myWeight, c, false)
	pq.add("me", myWeight, c, false)
}

// addVerb notes t, the stem of the task's verb: a generic verb counts less
// and is matched by any tool with the task's action; the verb and its
// close synonyms earn tools named with them a bonus.
func (pq *parsedQuery) addVerb(t string, cw float64) {
	if genericVerbs[t] {
		pq.byTerm[t].weight = cw * genericVerbWeight
		pq.verbConcept = pq.seen[t]
	}
	if verbAction(t) == actUnknown {
		return
	}
	pq.verbs = map[string]float64{t: 1}
	for _, e := range expansions[t] {
		if e.weight >= strongSynonym {
			pq.verbs[e.term] = max(pq.verbs[e.term], e.weight)
		}
	}
}

// sortTerms orders terms by concept, then term, so that Search adds up
// scores in the same order every time.
func sortTerms(terms []qterm) {
	sort.Slice(terms, func(i, j int) bool {
		a, b := terms[i], terms[j]
		if a.group != b.group {
			return a.group < b.group
		}
		return a.term < b.term
	})
}

// isPlural reports whether a word looks like a plural noun.
func isPlural(w string) bool {
	if irregularPlural[w] {
		return true
	}
	return len(w) > 3 && strings.HasSuffix(w, "s") && stem(w) != w && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is")
}

var irregularPlural = setOf(`people children men women data`)

// quantifiers make the nouns right after them plural in meaning: "every
// unresolved bug".
var quantifiers = setOf(`all every each many multiple several both few various`)

// moveVerbs with a time in the task reschedule something; sendVerbs with
// a time to come schedule it.
var (
	moveVerbs   = setOf(`move push shift bump`)
	sendVerbs   = setOf(`send post message email tell ping publish announce share`)
	futureWords = setOf(`tomorrow tonight later next monday tuesday wednesday thursday friday
		saturday sunday morning afternoon evening`)
)

// personAfter matches a capitalised word after a verb or preposition that
// is usually followed by a person: "invite Kim", "a call with Lee".
var personAfter = regexp.MustCompile(`(?i:\b(?:add|invite|assign|cc|with|ping|dm|tell|remind|message|email|notify|mention)\s+)([A-Z][a-z]{1,20})\b`)

// timeOfDay matches clock times: "10am", "2:30 pm", "14:00", "noon".
var timeOfDay = regexp.MustCompile(`(?i)\b(?:\d{1,2}(?::\d{2})?\s?(?:am|pm)|\d{1,2}:\d{2}|at \d{1,2}|noon|midnight)\b`)

// impliedConcepts returns concepts a task implies by the way it is put:
// "who changed it" asks for a history, "move it to Done" for a status,
// "who am I" for the authenticated user.
func impliedConcepts(words []string) []string {
	var out []string
	question := len(words) > 0 && questionWords[words[0]]
	for i, w := range words {
		next := ""
		if i+1 < len(words) {
			next = words[i+1]
		}
		switch {
		case (w == "who" || w == "what") && pastChange(next) && historyVerbs[stem(next)]:
			out = append(out, "history")
		case (w == "to" || w == "as" || w == "into") && statusWords[next]:
			out = append(out, "status")
		case w == "am" && i > 0 && words[i-1] == "who",
			(w == "login" || w == "signin") && next == "as":
			out = append(out, "whoami")
		case stem(w) == "log" && timeUnits[next], timeUnits[w] && stem(next) == "log":
			// "log 3 hours", "time logged"
			out = append(out, "worklog")
		case w == "who" && (next == "can" || next == "could" || next == "has") && i+2 < len(words) && accessVerbs[stem(words[i+2])]:
			// "who can see the budget", "who has edit rights"
			out = append(out, "user", "permission")
		case w == "who" && !(next == "am"):
			out = append(out, "user")
		case (w == "before" || w == "previous" || w == "earlier") && changeWithin(words[i+1:]),
			w == "looked" && next == "like",
			w == "used" && next == "to" && i > 0 && questionWords[words[0]]:
			// "what it looked like before last week's changes"
			out = append(out, "version")
		case w == "reply" && next == "all":
			out = append(out, "email")
		case question && i > 0 && saidVerbs[stem(w)]:
			// "what did the customer write": their comments.
			out = append(out, "comment")
		}
	}
	return out
}

// accessVerbs after "who can" ask who has access to something.
var accessVerbs = stemSet(`see view access edit open read comment share download`)

// changeWithin reports whether one of the next few words is a change:
// "before the edits", "before last week's changes".
func changeWithin(words []string) bool {
	for i, w := range words {
		if i == 4 {
			break
		}
		if historyVerbs[stem(w)] {
			return true
		}
	}
	return false
}

// saidVerbs in a question ask for what was said: messages, comments.
var saidVerbs = stemSet(`say write reply comment mention ask answer respond tell post`)

var timeUnits = setOf(`time hours hour minutes mins days`)

// pastChange reports whether w is the past tense of a verb that changes
// things: "changed", "deleted", "edited".
func pastChange(w string) bool {
	if !strings.HasSuffix(w, "ed") && irregular[w] == "" {
		return false
	}
	a := verbAction(stem(w))
	return a.intent() == intentWrite
}

// historyVerbs asked about in the past ("who changed it") ask for a
// history.
var historyVerbs = stemSet(`change edit modify update delete remove move rename set alter`)

// auxiliaries before a verb in a question make it what is asked about:
// "what did they write", "who is assigned".
var auxiliaries = setOf(`did do does is are was were be been being`)

var questionWords = setOf(`who what which when where why how`)

// statusWords name the state of a ticket, task or deal.
var statusWords = setOf(`done closed resolved complete completed fixed blocked open reopened
	todo backlog started ready pending cancelled canceled won lost qualified archived
	approved rejected active inactive paused review progress triage`)

// splitQuoted splits text into words, marking those between the \x01 and
// \x02 markers parseQuery puts around quoted text, and leaving an empty
// word where a sentence or clause breaks.
func splitQuoted(text string) []qword {
	var out []qword
	quoted := false
	start := 0
	flush := func(end int) {
		if end > start {
			for _, w := range joinCompounds(splitWords(text[start:end], MaxQueryBytes, true)) {
				out = append(out, qword{w: w, quoted: quoted})
			}
		}
		out = append(out, qword{})
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\x01', '\x02', '.', ',', ';', ':', '?', '!', '(', ')':
			// A dot inside a word ("v1.2") is no break, but such words
			// are rare in tasks and a spurious break only costs a bigram.
			flush(i)
			if text[i] == ':' {
				out[len(out)-1].colon = true
			}
			if text[i] == '\x01' {
				quoted = true
			} else if text[i] == '\x02' {
				quoted = false
			}
			start = i + 1
		}
	}
	flush(len(text))
	return out
}

func plainWords(ws []qword) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		if w.w != "" {
			out = append(out, w.w)
		}
	}
	return out
}

// leadRewrite handles nouns used as the verb of a task: "file a bug" is
// about creating, not files; "email the board" is about sending an email;
// "page the on-call" raises an alert. A rewrite that is kept as an
// alternative may name several words.
var leadRewrite = map[string]struct {
	to      string
	replace bool
}{
	stem("file"):    {"create", true},
	stem("issue"):   {"create", true},
	stem("email"):   {"send", false},
	stem("mail"):    {"send", false},
	stem("message"): {"send", false},
	stem("text"):    {"send", false},
	stem("ping"):    {"message", false},
	stem("chart"):   {"query", false},
	stem("log"):     {"add", false},
	stem("graph"):   {"query", false},
	stem("plot"):    {"query", false},
	stem("queue"):   {"schedule", false},
	stem("page"):    {"alert incident", true},
}

// genericVerbs are verbs that start the names of many tools of every
// kind. As the verb of a task they say little about which tool is meant
// beyond its action, which is scored separately, so their own matches
// count less.
var genericVerbs = stemSet(`add create get list show find search update edit change set make new
	delete remove send post run view read open check fetch retrieve lookup look see display browse
	modify give put`)

const genericVerbWeight = 0.5

// strongSynonym is the least weight of a synonym of the task's verb that
// still counts as naming the tool's verb.
const strongSynonym = 0.8

// participleWeight is how much a verb counts that describes a state or
// what is asked about rather than the action ("bugs assigned to me").
const participleWeight = 0.5

// myWeight is how much "my" and "me" count ("my tasks"); they do not count
// in the share of the task a tool matches.
const myWeight = 0.3

// timeWords say that a read task is about what happened or happens in a
// time span, so it wants a list ("meetings tomorrow", "errors this week").
var timeWords = setOf(`today tomorrow yesterday tonight week weeks month months year quarter
	hour hours day days morning afternoon evening weekend recent recently last past since ago
	upcoming lately monday tuesday wednesday thursday friday saturday sunday
	mondays tuesdays wednesdays thursdays fridays daily weekly monthly`)

// phrasalVerbs rewrite a verb and a particle that may follow it a few words
// later ("roll production back") into one verb. The particle is dropped;
// the verb is kept as a weaker alternative.
var phrasalVerbs = map[[2]string]string{
	{"get", "back"}:         "restore",
	{"stop", "sharing"}:     "unshare",
	{"stop", "following"}:   "unfollow",
	{"stop", "watching"}:    "unwatch",
	{"make", "copy"}:        "copy",
	{"make", "duplicate"}:   "duplicate",
	{"give", "access"}:      "share",
	{"give", "permission"}:  "share",
	{"take", "screenshot"}:  "screenshot",
	{"take", "note"}:        "note",
	{"bring", "back"}:       "restore",
	{"put", "back"}:         "restore",
	{"roll", "back"}:        "rollback",
	{"give", "back"}:        "refund",
	{"pay", "back"}:         "refund",
	{"send", "back"}:        "return",
	{"move", "back"}:        "reschedule",
	{"push", "back"}:        "reschedule",
	{"put", "off"}:          "reschedule",
	{"move", "up"}:          "reschedule",
	{"hand", "over"}:        "assign",
	{"hand", "off"}:         "assign",
	{"pass", "on"}:          "assign",
	{"take", "over"}:        "assign",
	{"pick", "up"}:          "assign",
	{"turn", "on"}:          "enable",
	{"switch", "on"}:        "enable",
	{"turn", "off"}:         "disable",
	{"switch", "off"}:       "disable",
	{"set", "up"}:           "setup",
	{"look", "up"}:          "lookup",
	{"find", "out"}:         "find",
	{"shut", "down"}:        "stop",
	{"spin", "up"}:          "create",
	{"tear", "down"}:        "delete",
	{"take", "down"}:        "delete",
	{"clean", "up"}:         "delete",
	{"clear", "out"}:        "delete",
	{"throw", "away"}:       "delete",
	{"throw", "out"}:        "delete",
	{"get", "rid"}:          "delete",
	{"call", "off"}:         "cancel",
	{"kick", "off"}:         "start",
	{"start", "over"}:       "restart",
	{"write", "up"}:         "write",
	{"write", "down"}:       "note",
	{"jot", "down"}:         "note",
	{"note", "down"}:        "note",
	{"fill", "in"}:          "update",
	{"fill", "out"}:         "update",
	{"sign", "up"}:          "register",
	{"sign", "off"}:         "approve",
	{"sign", "in"}:          "login",
	{"log", "in"}:           "login",
	{"back", "up"}:          "backup",
	{"close", "out"}:        "close",
	{"wrap", "up"}:          "complete",
	{"check", "off"}:        "complete",
	{"tick", "off"}:         "complete",
	{"cross", "off"}:        "complete",
	{"mark", "off"}:         "complete",
	{"break", "down"}:       "split",
	{"break", "up"}:         "split",
	{"break", "into"}:       "split",
	{"split", "up"}:         "split",
	{"split", "into"}:       "split",
	{"follow", "up"}:        "followup",
	{"reach", "out"}:        "message",
	{"loop", "in"}:          "invite",
	{"pull", "up"}:          "show",
	{"bring", "up"}:         "show",
	{"look", "at"}:          "view",
	{"dig", "into"}:         "investigate",
	{"look", "into"}:        "investigate",
	{"figure", "out"}:       "investigate",
	{"work", "out"}:         "investigate",
	{"go", "through"}:       "review",
	{"read", "through"}:     "review",
	{"sort", "out"}:         "fix",
	{"turn", "into"}:        "convert",
	{"roll", "out"}:         "deploy",
	{"push", "out"}:         "deploy",
	{"ship", "out"}:         "ship",
	{"send", "out"}:         "send",
	{"send", "over"}:        "send",
	{"fire", "off"}:         "send",
	{"shoot", "over"}:       "send",
	{"queue", "up"}:         "schedule",
	{"line", "up"}:          "schedule",
	{"block", "off"}:        "book",
	{"block", "out"}:        "book",
	{"cc", "in"}:            "invite",
	{"let", "know"}:         "tell",
	{"top", "up"}:           "increase",
	{"free", "up"}:          "delete",
	{"boot", "up"}:          "start",
	{"start", "up"}:         "start",
	{"hook", "up"}:          "connect",
	{"tie", "to"}:           "link",
	{"bring", "uptodate"}:   "update",
	{"get", "uptodate"}:     "update",
	{"keep", "uptodate"}:    "update",
	{"catch", "up"}:         "update",
	{"tack", "on"}:          "append",
	{"tack", "onto"}:        "append",
	{"stick", "on"}:         "append",
	{"tag", "on"}:           "append",
	{"point", "at"}:         "route",
	{"point", "to"}:         "route",
	{"swap", "for"}:         "replace",
	{"swap", "with"}:        "replace",
	{"swap", "out"}:         "replace",
	{"switch", "out"}:       "replace",
	{"hold", "off"}:         "reschedule",
	{"set", "aside"}:        "book",
	{"opt", "out"}:          "unsubscribe",
	{"unsubscribe", "from"}: "unsubscribe",
}

// phrasalByStem is phrasalVerbs keyed by the stem of the verb, so that
// "rolled back" and "gave it back" are found too; phrasalVerb has the
// stems.
var phrasalByStem, phrasalVerb = func() (map[[2]string]string, map[string]bool) {
	m, v := map[[2]string]string{}, map[string]bool{}
	for k, r := range phrasalVerbs {
		s := stem(k[0])
		m[[2]string{s, k[1]}] = r
		v[s] = true
	}
	return m, v
}()

// closeParticles are particles that also work as prepositions, so they
// form a phrasal verb only right after the verb ("log in", not "log 3
// hours in Jira").
var closeParticles = setOf(`in on at to from`)

// phrasalWindow is how many words may sit between a verb and its particle.
const phrasalWindow = 5

// phrasals rewrites phrasal verbs in words (see phrasalVerbs).
func phrasals(words []qword) []qword {
	for i := 0; i < len(words); i++ {
		v := words[i].w
		if v == "" {
			continue
		}
		sv := stem(v)
		if !phrasalVerb[sv] {
			continue
		}
		for j := i + 1; j < len(words) && j <= i+phrasalWindow; j++ {
			p := words[j].w
			if p == "" {
				break
			}
			r, ok := phrasalByStem[[2]string{sv, p}]
			if !ok || (closeParticles[p] && j != i+1) {
				continue
			}
			words[i].alt, words[i].w = v, r
			if r == "login" {
				words[i].alt = "" // "logged in" is not about logs
			}
			words = append(words[:j], words[j+1:]...)
			break
		}
	}
	return words
}
