package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxWordRunes drops longer words: identifiers, hashes and base64 runs carry
// no meaning for ranking and would only bloat the index.
const maxWordRunes = 32

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tokenize turns text into index terms: NFKC-folded, split on anything that
// is not a letter or digit and on snake_case, kebab-case and camelCase
// boundaries, lower-cased, with a few compounds joined, stopwords and pure
// numbers dropped, and each word stemmed. At most maxBytes of s are read and
// at most maxTokens terms are returned (maxTokens <= 0 means no limit).
func tokenize(s string, maxBytes, maxTokens int) []string {
	return tokenizeMode(s, maxBytes, maxTokens, false)
}

func tokenizeMode(s string, maxBytes, maxTokens int, query bool) []string {
	words := splitWords(s, maxBytes, query)
	words = joinCompounds(words)
	out := make([]string, 0, len(words))
	for _, w := range words {
		if stopwords[w] || utf8.RuneCountInString(w) < 2 {
			continue
		}
		out = append(out, stem(w))
		if maxTokens > 0 && len(out) >= maxTokens {
			break
		}
	}
	return out
}

// splitWords returns the lower-cased words of s (at most maxBytes of it),
// without the stopword and stemming steps. A word written as two camelCase
// parts ("PagerDuty", "GitHub") is also kept whole, so that it matches the
// lower-case spelling ("pagerduty") too; with wholeOnly it is kept whole
// only.
func splitWords(s string, maxBytes int, wholeOnly bool) []string {
	s = truncate(s, maxBytes)
	if !norm.NFKC.IsNormalString(s) {
		s = truncate(norm.NFKC.String(s), maxBytes)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, " ")
	}
	var words []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && isWordRune(rs[j]) {
			j++
		}
		parts := camelSplit(rs[i:j])
		whole := len(parts) == 2 && len(parts[0]) >= 2 && len(parts[1]) >= 2
		if !whole || !wholeOnly {
			for _, p := range parts {
				if w, ok := keepWord(p); ok {
					words = append(words, w)
				}
			}
		}
		if whole {
			if w, ok := keepWord(rs[i:j]); ok {
				words = append(words, w)
			}
		}
		i = j
		// An apostrophe inside a word ends it and drops its tail:
		// "yesterday's" -> "yesterday", "I'll" -> "i".
		if i+1 < len(rs) && (rs[i] == '\'' || rs[i] == '\u2019') && unicode.IsLetter(rs[i+1]) {
			for i++; i < len(rs) && isWordRune(rs[i]); i++ {
			}
		}
	}
	return words
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// camelSplit splits a run of letters and digits at camelCase boundaries:
// "getJiraIssue" -> get Jira Issue, "HTTPServer" -> HTTP Server, while
// "IDs" and "p99" stay whole.
func camelSplit(w []rune) [][]rune {
	var parts [][]rune
	start := 0
	for k := 1; k < len(w); k++ {
		r, prev := w[k], w[k-1]
		switch {
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			parts = append(parts, w[start:k])
			start = k
		case unicode.IsLower(r) && unicode.IsUpper(prev) && k-1 > start && unicode.IsUpper(w[k-2]) &&
			!(r == 's' && (k+1 == len(w) || !unicode.IsLower(w[k+1]))):
			parts = append(parts, w[start:k-1])
			start = k - 1
		}
	}
	return append(parts, w[start:])
}

// keepWord lower-cases a raw word and reports whether it is worth indexing:
// pure numbers and overlong words are not. Single letters are kept until
// compounds are joined ("e-mail"), then dropped.
func keepWord(w []rune) (string, bool) {
	if len(w) == 0 || len(w) > maxWordRunes {
		return "", false
	}
	digits := true
	for _, r := range w {
		if !unicode.IsDigit(r) {
			digits = false
			break
		}
	}
	if digits {
		return "", false
	}
	return strings.ToLower(string(w)), true
}

// compounds joins word pairs that are usually written apart in a task but
// together in tool names ("on call" / list_oncalls, "e-mail" / email).
var compounds = map[[2]string]string{
	{"on", "call"}:    "oncall",
	{"to", "do"}:      "todo",
	{"e", "mail"}:     "email",
	{"set", "up"}:     "setup",
	{"sign", "in"}:    "signin",
	{"log", "in"}:     "login",
	{"roll", "back"}:  "rollback",
	{"look", "up"}:    "lookup",
	{"follow", "up"}:  "followup",
	{"sub", "task"}:   "subtask",
	{"work", "log"}:   "worklog",
	{"free", "busy"}:  "freebusy",
	{"data", "base"}:  "database",
	{"web", "hook"}:   "webhook",
	{"time", "stamp"}: "timestamp",
	{"user", "name"}:  "username",
	{"back", "log"}:   "backlog",
	{"change", "log"}: "changelog",
	{"dead", "line"}:  "deadline",
	{"auto", "reply"}: "autoreply",
	{"co", "worker"}:  "coworker",
}

// compounds3 joins idioms of three words that act as one word: "bring
// the branch up to date" is not "bring up".
var compounds3 = map[[3]string]string{
	{"up", "to", "date"}:  "uptodate",
	{"out", "of", "date"}: "outdated",
}

// joinCompounds applies the compounds tables and joins the prefix "re" to
// the word after it ("re-run" -> "rerun").
func joinCompounds(words []string) []string {
	out := words[:0:0]
	for i := 0; i < len(words); i++ {
		if i+2 < len(words) {
			if j, ok := compounds3[[3]string{words[i], words[i+1], words[i+2]}]; ok {
				out = append(out, j)
				i += 2
				continue
			}
		}
		if i+1 < len(words) {
			if j, ok := compounds[[2]string{words[i], words[i+1]}]; ok {
				out = append(out, j)
				i++
				continue
			}
			if words[i] == "re" && isASCIILetters(words[i+1]) {
				out = append(out, "re"+words[i+1])
				i++
				continue
			}
		}
		out = append(out, words[i])
	}
	return out
}

// stopwords are dropped from queries and documents alike.
var stopwords = setOf(`
a an and are as at be been being but by can could did do does doing don doesn didn isn aren
won wasn for from had has have having here how i if in into is it its just let mine of on or our ours
please should so than that the their theirs them then there these they this those to too us was we were
what whats when where which while who whom whose will with would you your yours
ll re ve s t d m am also any all each every some now right want need like get got
`)

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

// stem is a light suffix stripper in the spirit of Porter's step 1: plurals
// (-s, -es, -ies), -ing and -ed, with a doubled final consonant undone
// ("running" -> "run"), then a final silent -e dropped so that "create",
// "creates", "created" and "creating" all become "creat". Irregular forms
// are mapped to their base first ("sent" -> "send"). Otherwise only ASCII
// lower-case words longer than three letters are touched.
func stem(w string) string {
	if r, ok := irregular[w]; ok {
		return stem(r)
	}
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zzes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]) && len(w)-3 >= 3:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") && hasVowel(w[:len(w)-2]) && len(w)-2 >= 3:
		w = undouble(w[:len(w)-2])
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "ee") {
		w = w[:len(w)-1]
	}
	return w
}

// irregular maps irregular verb forms that tasks use to the base form.
var irregular = map[string]string{
	"said": "say", "sent": "send", "wrote": "write", "written": "write", "made": "make",
	"took": "take", "taken": "take", "gave": "give", "given": "give", "ran": "run",
	"found": "find", "bought": "buy", "built": "build", "broke": "break", "broken": "break",
	"chose": "choose", "chosen": "choose", "drew": "draw", "drawn": "draw", "forgot": "forget",
	"forgotten": "forget", "froze": "freeze", "frozen": "freeze", "held": "hold", "kept": "keep",
	"knew": "know", "known": "know", "lost": "lose", "met": "meet", "paid": "pay", "saw": "see",
	"seen": "see", "sold": "sell", "spoke": "speak", "spoken": "speak", "spent": "spend",
	"stole": "steal", "stolen": "steal", "taught": "teach", "told": "tell", "thought": "think",
	"threw": "throw", "thrown": "throw", "woke": "wake", "began": "begin", "begun": "begin",
	"came": "come", "went": "go", "gone": "go", "hid": "hide", "hidden": "hide", "shown": "show",
	"rose": "rise", "risen": "rise", "meant": "mean", "tore": "tear", "torn": "tear",
	"undid": "undo", "undone": "undo", "rewrote": "rewrite", "rewritten": "rewrite",
	"fell": "fall", "fallen": "fall", "felt": "feel", "led": "lead",
	"children": "child", "people": "person", "men": "man", "women": "woman",
}

func hasVowel(s string) bool {
	return strings.ContainsAny(s, "aeiouy")
}

// undouble turns "runn" into "run" and "mapp" into "map", but leaves "ll",
// "ss" and "zz" ("bill", "pass") and results shorter than three letters
// ("add") alone.
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouylsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
