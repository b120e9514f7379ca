package toon

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// maxNumberPadding bounds the zeros canonicalNumber adds when it expands an
// exponent. It covers every finite float64 (down to 5e-324) exactly.
const maxNumberPadding = 1024

// numberParts splits a number matching -?\d+(\.\d+)?([eE][+-]?\d+)? into its
// pieces. ok is false if s does not match.
func numberParts(s string) (neg bool, intPart, frac, exp string, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart = s[start:i]
	if intPart == "" {
		return false, "", "", "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[start:i]
		if frac == "" {
			return false, "", "", "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		start = i + 1
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		digits := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if digits == i {
			return false, "", "", "", false
		}
		exp = s[start:i]
	}
	if i != len(s) {
		return false, "", "", "", false
	}
	return neg, intPart, frac, exp, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isNumericLike reports whether s looks like a number to a TOON decoder,
// i.e. matches /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i (which includes forms with
// leading zeros such as "05").
func isNumericLike(s string) bool {
	_, _, _, _, ok := numberParts(s)
	return ok
}

// hasLeadingZero reports whether a numeric-like token has a forbidden
// leading zero in its integer part ("05", "-007").
func hasLeadingZero(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0' && isDigit(s[1])
}

// validJSONNumber reports whether s is a number in RFC 8259 grammar.
func validJSONNumber(s string) bool {
	return isNumericLike(s) && !hasLeadingZero(s)
}

// canonicalNumber rewrites a numeric-like literal in TOON canonical decimal
// form: no exponent, no leading zeros, no trailing fractional zeros, no
// fractional part if it is zero, and -0 as 0. The conversion is exact. ok is
// false if s is not numeric-like or the expansion would need more than
// maxNumberPadding padding zeros.
func canonicalNumber(s string) (string, bool) {
	neg, intPart, frac, exp, ok := numberParts(s)
	if !ok {
		return "", false
	}
	if exp == "" && (len(intPart) == 1 || intPart[0] != '0') &&
		(frac == "" || frac[len(frac)-1] != '0') &&
		!(neg && intPart == "0" && frac == "") {
		return s, true // already canonical; the common case
	}

	// digits with the decimal point after the first point digits.
	digits := intPart + frac
	point := len(intPart)
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = strings.TrimRight(digits[lead:], "0")
	point -= lead
	if digits == "" {
		return "0", true // any zero, whatever its exponent or sign
	}
	if exp != "" {
		eneg := exp[0] == '-'
		e := strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if len(e) > 9 {
			return "", false
		}
		n, _ := strconv.Atoi(e) // at most nine digits: cannot fail
		if eneg {
			n = -n
		}
		point += n
	}
	k := len(digits)
	pad := 0
	switch {
	case point < 0:
		pad = -point
	case point > k:
		pad = point - k
	}
	if pad > maxNumberPadding {
		return "", false
	}

	var b strings.Builder
	b.Grow(k + pad + 3)
	if neg {
		b.WriteByte('-')
	}
	switch {
	case point <= 0:
		b.WriteString("0.")
		writeZeros(&b, -point)
		b.WriteString(digits)
	case point >= k:
		b.WriteString(digits)
		writeZeros(&b, point-k)
	default:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	}
	return b.String(), true
}

func writeZeros(b *strings.Builder, n int) {
	for range n {
		b.WriteByte('0')
	}
}

// normalizeNumber converts a valid JSON number literal into the model: a
// canonical json.Number, or, if the exact expansion is too long, the nearest
// float64 (nil if that overflows).
func normalizeNumber(s string) any {
	if c, ok := canonicalNumber(s); ok {
		return json.Number(c)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeError(err) {
		return nil
	}
	return floatNumber(f, 64)
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// floatNumber converts a float of the given bit size into the model: nil
// for NaN and ±Inf, otherwise a canonical json.Number.
func floatNumber(f float64, bitSize int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	if f == 0 {
		return json.Number("0")
	}
	return json.Number(strconv.FormatFloat(f, 'f', -1, bitSize))
}
