package agent

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A model does not read code points, it reads what text looks like and
// what it tokenises to. Content that spells a fence tag with look-alike
// characters ("‹/mcp-untrusted", "</mсp-untrusted" with a Cyrillic с, a
// zero-width space after the '<') may be read as a real fence, so the
// escaping matches tags on a skeleton of the text rather than on its
// bytes. The skeleton of a character is:
//
//   - nothing, for what cannot be seen: format characters (Unicode
//     category Cf: zero-width spaces and joiners, bidi controls, soft
//     hyphen, word joiner, BOM, tag characters), controls other than
//     whitespace (NUL included), combining marks (Mn, Me: so "c̀" is "c"
//     and "≮" is "<"), Hangul fillers, the braille blank, and invalid
//     UTF-8 or U+FFFD (which a provider may turn into anything);
//   - a space, for any whitespace (NBSP and the other Unicode spaces);
//   - the ASCII character of the confusables table below;
//   - otherwise its compatibility decomposition (NFKD: the mappings of
//     NFKC without recomposition, so fullwidth, small, circled,
//     superscript and mathematical forms become their ASCII letters),
//     each part mapped the same way, ASCII lowered.
//
// NFKD rather than NFKC because recomposition would hide a '<' inside
// "≮" (U+226E) and a 'c' inside "ç"; with marks dropped, both are seen.

// skeletonNone marks a visible character that maps to nothing the tag
// matcher looks for.
const skeletonNone = 0x80

// appendSkeleton appends the skeleton of the first character of s to dst
// and returns it with the byte length of that character.
func appendSkeleton(dst []byte, s string) ([]byte, int) {
	if s[0] < utf8.RuneSelf {
		return asciiSkeleton(dst, s[0]), 1
	}
	r, n := utf8.DecodeRuneInString(s)
	if b, ok := runeSkeleton(r); ok {
		if b != 0 {
			dst = append(dst, b)
		}
		return dst, n
	}
	d := norm.NFKD.PropertiesString(s).Decomposition()
	if d == nil {
		return append(dst, skeletonNone), n
	}
	for len(d) > 0 {
		dr, dn := utf8.DecodeRune(d)
		d = d[dn:]
		if dr < utf8.RuneSelf {
			dst = asciiSkeleton(dst, byte(dr))
			continue
		}
		// A decomposition is already complete, so its parts are not
		// decomposed again.
		b, ok := runeSkeleton(dr)
		switch {
		case !ok:
			dst = append(dst, skeletonNone)
		case b != 0:
			dst = append(dst, b)
		}
	}
	return dst, n
}

// asciiSkeleton appends the skeleton of an ASCII character: whitespace is
// a space, other controls are nothing, letters are lowered, and a
// backslash is '/' (a JSON-escaped "<\/" still reads as a closing tag).
func asciiSkeleton(dst []byte, c byte) []byte {
	switch {
	case c == ' ' || '\t' <= c && c <= '\r':
		return append(dst, ' ')
	case c < 0x20 || c == 0x7f:
		return dst
	case 'A' <= c && c <= 'Z':
		return append(dst, c+'a'-'A')
	case c == '\\':
		return append(dst, '/')
	}
	return append(dst, c)
}

// runeSkeleton is the skeleton of a non-ASCII rune when it is decided
// without decomposition: 0 for an invisible rune, ' ' for whitespace, an
// ASCII character for a confusable. ok is false when the rune needs its
// decomposition looked at.
func runeSkeleton(r rune) (b byte, ok bool) {
	switch {
	case r == utf8.RuneError:
		return 0, true
	case unicode.IsSpace(r):
		return ' ', true
	case invisible(r):
		return 0, true
	}
	if c := confusable(r); c != 0 {
		return c, true
	}
	return 0, false
}

// invisible reports whether r shows nothing on its own.
func invisible(r rune) bool {
	switch r {
	case 0x115F, 0x1160, 0x3164, 0xFFA0, // Hangul fillers
		0x2800: // braille pattern blank
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Mn, unicode.Me)
}

// confusable maps the characters that look like '<', '/', '-' or a letter
// of "mcp" to that ASCII character (letters lower case), and anything
// else to 0. It lists only characters whose compatibility decomposition
// does not already give the ASCII character: fullwidth and small forms
// (U+FF1C ＜, U+FE64 ﹤, U+FF0F ／, U+FE63 ﹣, U+FF0D －), U+2329 〈 (which
// decomposes to U+3008), and mathematical, circled, superscript and
// other styled Latin letters are handled by NFKD, and the Greek letters
// below stand for their mathematical styles, which decompose to them.
//
// The set is from Unicode's confusables.txt (the entries whose target is
// '<', '/', '-', 'c', 'm' or 'p', upper case included) but for those
// marked (*), added because they read as that character although
// confusables.txt does not map them there:
//
//	'<': U+02C2 ˂, U+1438 ᐸ, U+16B2 ᚲ, U+2039 ‹, U+276E ❮, U+1D236 𝈶;
//	     (*) U+00AB «, U+226A ≪, U+276C ❬, U+27E8 ⟨, U+27EA ⟪, U+29FC ⧼,
//	     U+3008 〈, U+300A 《
//	'/': U+1735 ᜵, U+2041 ⁁, U+2044 ⁄, U+2215 ∕, U+2571 ╱, U+27CB ⟋,
//	     U+29F8 ⧸, U+2CC6 Ⳇ, U+2F03 ⼃, U+3033 〳, U+30CE ノ, U+31D3 ㇓,
//	     U+4E3F 丿, U+1D23A 𝈺
//	'-': U+02D7 ˗, U+06D4 ۔, U+2010 ‐, U+2011 ‑, U+2012 ‒, U+2013 –,
//	     U+2043 ⁃, U+2212 −, U+2796 ➖, U+2CBA Ⲻ, U+FE58 ﹘; (*) U+2014 —,
//	     U+2015 ―
//	c: U+03F2 ϲ, U+03F9 Ϲ, U+0421 С, U+0441 с, U+13DF Ꮯ, U+1D04 ᴄ,
//	   U+2CA4 Ⲥ, U+2CA5 ⲥ, U+A4DA ꓚ, U+ABAF ꮯ, U+102A2 𐊢, U+10302 𐌂,
//	   U+10415 𐐕, U+1043D 𐐽, U+1051C 𐔜, U+118E9 𑣩, U+118F2 𑣲,
//	   U+1F74C 🝌
//	m: U+039C Μ, U+03FA Ϻ, U+041C М, U+13B7 Ꮇ, U+15F0 ᗰ, U+16D6 ᛖ,
//	   U+2C98 Ⲙ, U+A4DF ꓟ, U+102B0 𐊰, U+10311 𐌑; (*) U+043C м,
//	   U+1D0D ᴍ
//	p: U+03A1 Ρ, U+03C1 ρ, U+03F1 ϱ, U+0420 Р, U+0440 р, U+13E2 Ꮲ,
//	   U+146D ᑭ, U+2374 ⍴, U+2CA2 Ⲣ, U+2CA3 ⲣ, U+A4D1 ꓑ, U+10295 𐊕;
//	   (*) U+1D18 ᴘ
//
// Only the tag name's first letters matter, because a '<' followed by
// "mcp" is escaped whatever comes next (see fenceTagScan); '>' does not
// matter, because neutralising the '<' that starts a tag is enough.
func confusable(r rune) byte {
	switch r {
	case 0x1735, 0x2041, 0x2044, 0x2215, 0x2571, 0x27CB, 0x29F8, 0x2CC6,
		0x2F03, 0x3033, 0x30CE, 0x31D3, 0x4E3F, 0x1D23A:
		return '/'
	case 0x00AB, 0x02C2, 0x1438, 0x16B2, 0x2039, 0x226A, 0x276C, 0x276E,
		0x27E8, 0x27EA, 0x29FC, 0x3008, 0x300A, 0x1D236:
		return '<'
	case 0x02D7, 0x06D4, 0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2015,
		0x2043, 0x2212, 0x2796, 0x2CBA, 0xFE58:
		return '-'
	case 0x03F2, 0x03F9, 0x0421, 0x0441, 0x13DF, 0x1D04, 0x2CA4, 0x2CA5,
		0xA4DA, 0xABAF, 0x102A2, 0x10302, 0x10415, 0x1043D, 0x1051C, 0x118E9,
		0x118F2, 0x1F74C:
		return 'c'
	case 0x039C, 0x03FA, 0x041C, 0x043C, 0x13B7, 0x15F0, 0x16D6, 0x1D0D,
		0x2C98, 0xA4DF, 0x102B0, 0x10311:
		return 'm'
	case 0x03A1, 0x03C1, 0x03F1, 0x0420, 0x0440, 0x13E2, 0x146D, 0x1D18,
		0x2374, 0x2CA2, 0x2CA3, 0xA4D1, 0x10295:
		return 'p'
	}
	return 0
}

// fenceLetters is the start of the tag name that is enough to escape a
// '<': "<mcp" may be read as the fence whatever follows ("</mcp>",
// "</mcp-untrusted", "</mcp‑untrustеd" with look-alikes further on), so
// nothing after it is looked at.
const fenceLetters = "mcp"

// fenceTagScan reports whether s, the text right after a '<' or a
// look-alike of it, continues as a fence tag, and how many bytes of s it
// looked at. A fence tag is optional spaces and slashes (or look-alikes),
// then the letters m, c, p in any case and in look-alikes, with any
// spaces, hyphens and underscores between them and anything invisible
// anywhere. This over-matches on purpose ("< m c p", "<mcp-server>"):
// escaping a '<' costs nothing, missing one breaks the fence. The scan
// stops at the first character that cannot continue a tag, and no
// character that can continue one is a '<', so the cost of all calls over
// one text is linear in its length.
func fenceTagScan(s string) (opens bool, looked int) {
	var buf [16]byte
	matched := 0
	for i := 0; i < len(s); {
		sk, n := appendSkeleton(buf[:0], s[i:])
		i += n
		for _, c := range sk {
			switch {
			case c == fenceLetters[matched]:
				matched++
				if matched == len(fenceLetters) {
					return true, i
				}
			case c == ' ' || c == '-' || c == '_':
			case c == '/' && matched == 0:
			default:
				return false, i
			}
		}
	}
	return false, len(s)
}

// lessThanLen returns the byte length of the first character of s if it
// is '<' or looks like it, and 0 otherwise.
func lessThanLen(s string) int {
	if s[0] < utf8.RuneSelf {
		if s[0] == '<' {
			return 1
		}
		return 0
	}
	var buf [16]byte
	sk, n := appendSkeleton(buf[:0], s)
	if len(sk) == 1 && sk[0] == '<' {
		return n
	}
	return 0
}
