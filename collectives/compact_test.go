package collectives

import (
	"strings"
	"testing"
)

// TestCompactHeader: a clean check header travels in its compact form and decodes to the same
// header; merged with a rank's that passed another count, the verdict names both ranks and
// counts, as with the full form; a header that saw a rejection is not sent compact; a
// truncated compact header is refused.
func TestCompactHeader(t *testing.T) {
	h := newHeader(3, sig{coll: "allreduce", n: 5, typ: "float64", op: 1}, nil)
	if !h.clean() {
		t.Fatalf("fresh header %+v is not clean", h)
	}
	b := make([]byte, compactLen)
	h.encodeCompact(b)
	ph, hl, ok := decodeAny(b)
	if !ok || hl != compactLen || ph != h {
		t.Fatalf("decoded %+v (len %d, ok %v), want %+v", ph, hl, ok, h)
	}
	if _, _, ok := decodeAny(b[:compactLen-1]); ok {
		t.Fatal("a truncated compact header decoded")
	}
	other := newHeader(1, sig{coll: "allreduce", n: 7, typ: "float64", op: 1}, nil)
	other.merge(ph)
	err := other.verdict(nil)
	if err == nil || !strings.Contains(err.Error(), "passed 5 elements") || !strings.Contains(err.Error(), "passed 7 elements") ||
		!strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "rank 3") {
		t.Fatalf("verdict %v, want ranks 1 and 3 with 7 and 5 elements", err)
	}
	if other.clean() {
		t.Fatal("a header that saw a disagreement is clean")
	}
	bad := newHeader(2, sig{coll: "allreduce", n: 5, typ: "float64", op: 1}, errMismatchTest)
	if bad.clean() {
		t.Fatal("a header with a local error is clean")
	}
	same := sig{coll: "allreduce", n: 5, typ: "float64", op: 1}
	for _, d := range []sig{{coll: "allreducf", n: 5, typ: "float64", op: 1}, {coll: "allreduce", n: 6, typ: "float64", op: 1},
		{coll: "allreduce", n: 5, typ: "float32", op: 1}, {coll: "allreduce", n: 5, typ: "float64", op: 2},
		{coll: "allreduce", n: 5, typ: "float64", op: 1, root: 1}, {coll: "allreduce", n: 5, typ: "float64", op: 1, extra: 1}} {
		if d.fingerprint() == same.fingerprint() {
			t.Errorf("%+v and %+v share a fingerprint", d, same)
		}
	}
}

var errMismatchTest = ErrMismatch
