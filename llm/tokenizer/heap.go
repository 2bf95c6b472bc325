package tokenizer

import (
	"math"
	"sync"
)

// mergeCand is a candidate merge of the adjacent symbols left and right. Both tokenizers pack
// their whole ordering into key (smaller first) so that the heap compares one integer:
// SentencePiece's highest score, then leftmost; BPE's lowest rank, then leftmost.
type mergeCand struct {
	key   uint64
	right int32
	a, b  int32 // SentencePiece: merged size. BPE: ids of left and right when made
	c     int32 // BPE: id of the merged token
}

// spmKey orders by descending score, then ascending left index.
func spmKey(score float32, left int32) uint64 {
	bits := math.Float32bits(score)
	if bits&(1<<31) != 0 {
		bits = ^bits
	} else {
		bits |= 1 << 31
	}
	// bits now grows with the score; invert it so that the best score is the smallest key.
	return uint64(^bits)<<32 | uint64(uint32(left))
}

// bpeKey orders by ascending rank, then ascending left index.
func bpeKey(rank, left int32) uint64 {
	return uint64(uint32(rank))<<32 | uint64(uint32(left))
}

func candLeft(c mergeCand) int32 { return int32(uint32(c.key)) }

// mergeQueue is a binary min-heap of candidates. The merge loops pop the best candidate and
// push at most two new ones per merge, which keeps a word of n symbols at O(n log n).
type mergeQueue []mergeCand

func (q *mergeQueue) push(x mergeCand) {
	h := append(*q, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].key <= x.key {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
	*q = h
}

func (q *mergeQueue) pop() mergeCand {
	h := *q
	top := h[0]
	n := len(h) - 1
	x := h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h[r].key < h[l].key {
			c = r
		}
		if x.key <= h[c].key {
			break
		}
		h[i] = h[c]
		i = c
	}
	if n > 0 {
		h[i] = x
	}
	*q = h
	return top
}

// scratch holds the buffers of one Encode call; a pool reuses them across calls.
type scratch struct {
	words wordSplitter
	spm   []spmSymbol
	bpe   []bpeSymbol
	q     mergeQueue
	buf   []byte
	pops  int // candidates popped, for the tests' operation count
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// release returns the scratch to the pool unless one huge input made it too big to keep.
func (s *scratch) release() {
	if cap(s.spm) > 1<<16 || cap(s.bpe) > 1<<16 || cap(s.q) > 1<<17 || cap(s.buf) > 1<<18 || cap(s.words.cps) > 1<<18 {
		return
	}
	s.pops = 0
	scratchPool.Put(s)
}
