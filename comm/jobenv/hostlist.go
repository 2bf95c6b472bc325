package jobenv

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHostlist bounds how many names ExpandHostlist produces, so a hostile or mistyped
// expression such as "n[0-999999999]" is an error rather than a memory blow-up.
const MaxHostlist = 1 << 16

// ExpandHostlist expands a Slurm hostlist expression into host names, in order:
// "node[01-04,07],login" gives node01 node02 node03 node04 node07 login. A range keeps the
// zero padding of its lower bound (as Slurm does); several bracket groups in one name give
// every combination ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2).
func ExpandHostlist(expr string) ([]string, error) {
	var out []string
	for _, item := range splitTopLevel(expr) {
		if item == "" {
			if strings.TrimSpace(expr) == "" {
				return nil, nil
			}
			return nil, fmt.Errorf("hostlist %q: empty host name", expr)
		}
		names, err := expandItem(item, MaxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTopLevel splits at the commas outside brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandItem expands one host pattern (no top-level commas) into at most limit names.
func expandItem(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "] \t") {
			return nil, fmt.Errorf("bad host name %q", item)
		}
		if limit < 1 {
			return nil, fmt.Errorf("more than %d hosts", MaxHostlist)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", item)
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	if strings.ContainsAny(prefix, "] \t") {
		return nil, fmt.Errorf("bad host name %q", item)
	}
	values, err := expandRanges(body, limit)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", item, err)
	}
	tails, err := expandItem(rest, limit/len(values))
	if err != nil {
		return nil, err
	}
	if len(values)*len(tails) > limit {
		return nil, fmt.Errorf("more than %d hosts", MaxHostlist)
	}
	out := make([]string, 0, len(values)*len(tails))
	for _, v := range values {
		for _, t := range tails {
			out = append(out, prefix+v+t)
		}
	}
	return out, nil
}

// expandRanges expands the inside of one bracket: "01-04,07".
func expandRanges(body string, limit int) ([]string, error) {
	if body == "" {
		return nil, fmt.Errorf("empty brackets")
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isDigits(lo) || (isRange && !isDigits(hi)) {
			return nil, fmt.Errorf("bad range %q", r)
		}
		a, errA := strconv.ParseUint(lo, 10, 32)
		b := a
		var errB error
		if isRange {
			b, errB = strconv.ParseUint(hi, 10, 32)
		}
		if errA != nil || errB != nil || b < a {
			return nil, fmt.Errorf("bad range %q", r)
		}
		if b-a >= uint64(limit-len(out)) {
			return nil, fmt.Errorf("more than %d hosts", MaxHostlist)
		}
		width := len(lo)
		for v := a; v <= b; v++ {
			s := strconv.FormatUint(v, 10)
			if len(s) < width {
				s = strings.Repeat("0", width-len(s)) + s
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
