// Package visible knows which characters show nothing: the one rule that
// the agent's fencing and the local API's approval questions share, in a
// package that imports neither.
package visible

import (
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r shows nothing and means nothing as whitespace:
// format characters (Unicode category Cf: the tag characters U+E0000 to
// U+E007F, zero-width spaces and joiners, bidi controls, soft hyphen, word
// joiner, BOM), controls other than the ASCII whitespace \t \n \v \f \r,
// the Hangul fillers, the braille blank, and the variation selectors
// (U+FE00–FE0F, U+E0100–E01EF) and Mongolian free variation selectors
// (U+180B–180F). These are the invisible characters of the agent's
// look-alike matcher (agent/lookalike.go) less the other combining marks,
// which belong to the letters they sit on: a variation selector draws
// nothing on a letter, and 256 of them spell a byte each (review finding
// 5).
//
// A model reads them all the same: an instruction or a fence closer spelled
// in tag characters is invisible to the person and plain to the model
// (issue #20 item 3), so agent-facing text shows them (agent.ShowHidden).
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
