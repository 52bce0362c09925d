// Package visible writes the characters that show nothing (format
// characters, controls, variation selectors) as "[U+XXXX]", so that what
// a model reads is what a person sees; the agent shows them in every text
// it hands on, and the CLI in what it prints of a held tool.
package visible

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r shows nothing and means nothing as whitespace:
// format characters (Unicode category Cf: the tag characters U+E0000 to
// U+E007F, zero-width spaces and joiners, bidi controls, soft hyphen, word
// joiner, BOM), controls other than the ASCII whitespace \t \n \v \f \r,
// the Hangul fillers, the braille blank, and the variation selectors
// (U+FE00–FE0F, U+E0100–E01EF) and Mongolian free variation selectors
// (U+180B–180F). These are the invisible characters of the look-alike
// matcher (agent/lookalike.go) less the other combining marks, which belong to
// the letters they sit on: a variation selector draws nothing on a letter,
// and 256 of them spell a byte each (review finding 5).
//
// A model reads them all the same: an instruction or a fence closer spelled
// in tag characters is invisible to the person and plain to the model
// (issue #20 item 3), so agent-facing text shows them (ShowHidden).
func Hidden(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return r < 0x20 && (r < '\t' || r > '\r') || r == 0x7f
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800,
		0xFE00 <= r && r <= 0xFE0F, 0xE0100 <= r && r <= 0xE01EF, 0x180B <= r && r <= 0x180F:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Cc)
}

// ShowHidden returns s with every Hidden character written as "[U+XXXX]"
// (four to six hex digits, upper case), so that what the model reads is
// what a person sees. Past the first Hidden character, invalid UTF-8
// becomes U+FFFD (visible too). s itself is returned when it holds no
// Hidden character.
//
// The replacement brings no '<' and no look-alike of one, and its
// brackets and '+' are outside the fence id's alphabet, so it can neither
// open a fence tag nor join two runs of id characters into an id.
func ShowHidden(s string) string {
	i := Index(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if Hidden(r) && !(r == zwj && emojiJoin(prev, s[i:])) && !(r == vs16 && emojiStyle(prev, s[i:])) {
			b.WriteString(codePoint(r))
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// zwj is the zero-width joiner, which also joins emoji into one picture.
const zwj = 0x200D

// vs16 is variation selector 16, which asks for an emoji's picture (❤️,
// 🏳️‍🌈, 1️⃣).
const vs16 = 0xFE0F

// emojiStyle reports whether variation selector 16 after prev belongs to
// an emoji: after a pictograph, or after a keycap's digit, '#' or '*'
// when the keycap mark U+20E3 follows. There it is part of what a person
// sees, and one selector per emoji carries nothing a model could read as
// text (a run of selectors, or one after a letter, is shown). Keeping it
// keeps emoji readable: "❤[U+FE0F]" for a heart would teach people to
// ignore the markers.
func emojiStyle(prev rune, after string) bool {
	if pictographic(prev) {
		return true
	}
	next, _ := utf8.DecodeRuneInString(after)
	return next == 0x20E3 && ('0' <= prev && prev <= '9' || prev == '#' || prev == '*')
}

// emojiJoin reports whether a zero-width joiner between prev and the text
// after it joins two emoji (👩‍💻): there it is part of what a person
// sees, and it carries nothing a model could read as text.
func emojiJoin(prev rune, after string) bool {
	next, _ := utf8.DecodeRuneInString(after)
	return (pictographic(prev) || prev == 0xFE0F || 0x1F3FB <= prev && prev <= 0x1F3FF) && pictographic(next)
}

// pictographic approximates Unicode's Extended_Pictographic property
// (which package unicode lacks) by the blocks that hold the emoji.
func pictographic(r rune) bool {
	return 0x1F000 <= r && r <= 0x1FAFF || 0x2600 <= r && r <= 0x27BF ||
		0x2300 <= r && r <= 0x23FF || 0x2B00 <= r && r <= 0x2BFF
}

// codePoint is "[U+XXXX]" for r.
func codePoint(r rune) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	if len(h) < 4 {
		h = strings.Repeat("0", 4-len(h)) + h
	}
	return "[U+" + h + "]"
}

// Index is the byte index of the first Hidden character of s, or -1.
func Index(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if Hidden(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError && Hidden(r) {
			return i
		}
		i += n
	}
	return -1
}
