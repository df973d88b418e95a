package sandbox

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// unquoteJSON decodes raw, a JSON string literal with its quotes, exactly as encoding/json decodes it into a
// string: escapes decoded, invalid UTF-8 and lone surrogates replaced by U+FFFD. ok is false when raw is not a
// valid JSON string. It exists because a tool result's text is JSON inside JSON, dense in escapes, and the
// decoder's own unquoting took a sixth of the agent's CPU per 16 KiB call (runs of plain ASCII are copied whole
// here, one escape at a time there); FuzzUnquoteJSON holds it to encoding/json.
func unquoteJSON(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			if e := escaped[s[i+1]]; e != 0 {
				b.WriteByte(e)
				i += 2
				continue
			}
			if s[i+1] != 'u' {
				return "", false
			}
			r, ok := hex4(s[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if r2, ok := hex4(s[i+2:]); ok {
						if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
							b.WriteRune(pair)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			b.WriteRune(r)
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && plain[s[j]] {
				j++
			}
			b.Write(s[i:j])
			i = j
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.Write(s[i : i+size])
			}
			i += size
		}
	}
	return b.String(), true
}

// escaped maps the byte after a backslash to what it stands for, 0 for 'u' and for what is not an escape.
var escaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// plain marks the ASCII bytes a JSON string holds as they are.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 is the code unit of the four hex digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
