package collectives

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"unsafe"

	"github.com/gorun-hpc/gorun/comm"
)

// ErrMismatch is wrapped by the error every rank returns when the ranks' arguments to one
// collective disagree (element counts, element type, op, root) or a rank rejected its own.
var ErrMismatch = errors.New("ranks' arguments disagree")

// Argument check. Every collective except Barrier starts with a recursive-doubling exchange of
// a small header between the ranks: each carries the smallest and largest fingerprint of the
// arguments seen so far (collective, count, element type, op, root) and whether a rank rejected
// its own arguments. After log2(p) steps every rank knows whether all agree, so bad input gives
// an error on every rank, never a hang or a wrong answer; and because the exchange has the same
// shape whatever the message size, ranks that would pick different algorithms meet in it before
// they diverge. Small allreduces carry their data in the same messages, so for them the check
// costs nothing; elsewhere it costs one small-message recursive doubling (GORUN_COLL_CHECK=0
// skips it, as MPI does, at the price of undefined behaviour on bad input).
//
// While every header seen agrees (the common case), a rank sends the compact form (its rank,
// the fingerprint and its count: all a clean header holds), so that an 8-byte allreduce's
// message stays within one cache line of a shared-memory fastbox; a rank whose header has
// seen a disagreement sends the full one.

const (
	hdrLen   = 56
	hdrMagic = 0x676f6c63 // "golc"
	// The compact header: compactMagic<<32 | rank, fingerprint, count.
	compactLen   = 24
	compactMagic = 0x676f6c43 // "golC"

	flagLocalErr = 1 << 0 // a rank rejected its own arguments (errRank says which, lowest first)
	flagBadMsg   = 1 << 1 // a check message had an unexpected size or shape
	noRank       = ^uint32(0)
)

type header struct {
	flags            uint32
	errRank          uint32
	fpMin, fpMax     uint64
	minRank, maxRank uint32
	minN, maxN       uint64
}

func (h *header) encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(hdrMagic)<<32|uint64(h.flags))
	binary.LittleEndian.PutUint64(b[8:], uint64(h.errRank))
	binary.LittleEndian.PutUint64(b[16:], h.fpMin)
	binary.LittleEndian.PutUint64(b[24:], h.fpMax)
	binary.LittleEndian.PutUint64(b[32:], uint64(h.minRank)<<32|uint64(h.maxRank))
	binary.LittleEndian.PutUint64(b[40:], h.minN)
	binary.LittleEndian.PutUint64(b[48:], h.maxN)
}

// clean reports whether h holds no disagreement, so that its compact form says all of it.
func (h *header) clean() bool {
	return h.ok() && h.errRank == noRank && h.minRank == h.maxRank && h.minN == h.maxN
}

// encodeCompact writes a clean header's compact form.
func (h *header) encodeCompact(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(compactMagic)<<32|uint64(h.minRank))
	binary.LittleEndian.PutUint64(b[8:], h.fpMin)
	binary.LittleEndian.PutUint64(b[16:], h.minN)
}

// decodeAny decodes a full or a compact header and returns its length.
func decodeAny(b []byte) (header, int, bool) {
	if len(b) >= compactLen && binary.LittleEndian.Uint32(b[4:]) == compactMagic {
		rank := binary.LittleEndian.Uint32(b[0:])
		fp, n := binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
		return header{errRank: noRank, fpMin: fp, fpMax: fp, minRank: rank, maxRank: rank, minN: n, maxN: n}, compactLen, true
	}
	h, ok := decodeHeader(b)
	return h, hdrLen, ok
}

func decodeHeader(b []byte) (header, bool) {
	if len(b) < hdrLen {
		return header{}, false
	}
	w0 := binary.LittleEndian.Uint64(b[0:])
	if w0>>32 != hdrMagic {
		return header{}, false
	}
	rr := binary.LittleEndian.Uint64(b[32:])
	return header{
		flags:   uint32(w0),
		errRank: uint32(binary.LittleEndian.Uint64(b[8:])),
		fpMin:   binary.LittleEndian.Uint64(b[16:]),
		fpMax:   binary.LittleEndian.Uint64(b[24:]),
		minRank: uint32(rr >> 32), maxRank: uint32(rr),
		minN: binary.LittleEndian.Uint64(b[40:]),
		maxN: binary.LittleEndian.Uint64(b[48:]),
	}, true
}

func (h *header) merge(o header) {
	h.flags |= o.flags
	h.errRank = min(h.errRank, o.errRank)
	if o.fpMin < h.fpMin {
		h.fpMin, h.minRank, h.minN = o.fpMin, o.minRank, o.minN
	}
	if o.fpMax > h.fpMax {
		h.fpMax, h.maxRank, h.maxN = o.fpMax, o.maxRank, o.maxN
	}
}

func (h *header) ok() bool { return h.flags == 0 && h.fpMin == h.fpMax }

// verdict turns a merged header into this rank's error (nil when all agreed).
func (h *header) verdict(lerr error) error {
	switch {
	case h.ok():
		return nil
	case lerr != nil:
		return lerr
	case h.flags&flagLocalErr != 0:
		return fmt.Errorf("%w: rank %d rejected its arguments", ErrMismatch, h.errRank)
	case h.fpMin != h.fpMax && h.minN != h.maxN:
		return fmt.Errorf("%w: rank %d passed %d elements, rank %d passed %d elements", ErrMismatch, h.minRank, h.minN, h.maxRank, h.maxN)
	case h.fpMin != h.fpMax:
		return fmt.Errorf("%w: ranks %d and %d differ in collective, element type, op, root or counts", ErrMismatch, h.minRank, h.maxRank)
	}
	return fmt.Errorf("%w: a check message of unexpected size arrived (different collectives called, or different GORUN_COLL_* settings)", ErrMismatch)
}

// sig is what every rank of a collective must agree on.
type sig struct {
	coll  string
	n     int    // element count (the one that must match), reported in errors
	typ   string // element type
	op    uint64
	root  int
	extra uint64 // e.g. a hash of the counts array
}

// fingerprint hashes the collective's name, the type's name (each in 8-byte words, then its
// length) and the four numbers a word at a time, h = (h ^ word) * an odd constant, then
// splitmix64's finalizer: it runs in every collective call, where hashing byte by byte cost
// more than a small message's transfer. Each step is a bijection of h, so signatures that
// differ in one word never collide.
func (s sig) fingerprint() uint64 {
	h := mixString(fpSeed, s.coll)
	h = mixString(h, s.typ)
	h = (h ^ uint64(s.n)) * fpPrime
	h = (h ^ s.op) * fpPrime
	h = (h ^ uint64(s.root)) * fpPrime
	return mix64(h ^ s.extra)
}

const (
	fpSeed  = 0x676f72756e636f6c // "goruncol"
	fpPrime = 0x100000001b3      // FNV's 64-bit prime
)

// mix64 is splitmix64's finalizer (a bijection of the 64-bit words).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// mixString hashes s into h: its bytes in little-endian words (the last one zero-padded),
// then its length.
func mixString(h uint64, s string) uint64 {
	n := len(s)
	for len(s) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64([]byte(s[:8]))) * fpPrime
		s = s[8:]
	}
	var w uint64
	for i := len(s) - 1; i >= 0; i-- {
		w = w<<8 | uint64(s[i])
	}
	return (((h ^ w) * fpPrime) ^ uint64(n)) * fpPrime
}

func typeName[T comm.Elem]() string { return reflect.TypeFor[T]().String() }

func hashInts(xs []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range xs {
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		h.Write(b[:])
	}
	return h.Sum64()
}

func newHeader(rank int, s sig, lerr error) header {
	fp := s.fingerprint()
	h := header{errRank: noRank, fpMin: fp, fpMax: fp, minRank: uint32(rank), maxRank: uint32(rank), minN: uint64(s.n), maxN: uint64(s.n)}
	if lerr != nil {
		h.flags |= flagLocalErr
		h.errRank = uint32(rank)
	}
	return h
}

// agree runs the argument check alone (no data).
func agree(cc *comm.Comm, tag int, s sig, lerr error) error {
	return rdCheck[byte](cc, tag, nil, nil, true, -1, s, lerr, 0)
}

// agreeOrLocal runs the check when enabled, else only reports this rank's own error.
func agreeOrLocal(t *Tuning, cc *comm.Comm, tag int, s sig, lerr error) error {
	if !t.Check {
		return lerr
	}
	return agree(cc, tag, s, lerr)
}

// rdCheck is the recursive-doubling exchange of check headers. With data non-nil it also
// carries the data: with fn non-nil it is an allreduce of data (fn combines in rank order, so
// non-commutative ops are exact); with fn nil it is a broadcast from root, each message
// carrying the data once its sender has it. Non-power-of-two groups fold the first 2*rem
// ranks pairwise. Every rank goes through every step even after a disagreement is seen, so
// that no peer is left waiting; the data is simply not combined any more.
func rdCheck[T comm.Elem](cc *comm.Comm, tag int, data []T, fn func(in, inout []T), commute bool, root int, s sig, lerr error, fuseCap int) error {
	p, r := cc.Size(), cc.Rank()
	h := newHeader(r, s, lerr)
	if p == 1 {
		return h.verdict(lerr)
	}
	esz := elemSize[T]()
	nb := len(data) * esz
	outS := getScratch(hdrLen + nb)
	inS := getScratch(hdrLen + max(nb, fuseCap))
	defer outS.release()
	defer inS.release()
	out := outS.bytes(hdrLen + nb)
	in := inS.bytes(hdrLen + max(nb, fuseCap))
	mine := castBytes(out[hdrLen:], data) // data travels in out; reductions happen there
	bcast := fn == nil && data != nil
	have := !bcast || r == root || nb == 0 // whether mine holds the data (a broadcast's non-roots: not yet)
	if have {
		copy(mine, data)
	}
	pack := func() []byte {
		end := hdrLen
		if have {
			end += nb
		}
		if h.clean() {
			h.encodeCompact(out[hdrLen-compactLen : hdrLen])
			return out[hdrLen-compactLen : end]
		}
		h.encode(out)
		return out[:end]
	}
	// unpack validates a received message, merges its header and returns its payload as []T
	// when it matches ours in size and the exchange is still clean.
	unpack := func(st comm.Status, err error) ([]T, error) {
		// A longer message than expected (a peer with more data) is truncated, but its header
		// is whole: merge it, so the error can name the ranks and counts that differ.
		trunc := isTruncation(err)
		if err != nil && !trunc {
			return nil, err
		}
		ph, hl, ok := decodeAny(in[:min(st.Count, len(in))])
		if !ok {
			h.flags |= flagBadMsg
			return nil, nil
		}
		h.merge(ph)
		if trunc || (st.Count-hl != nb && !(bcast && st.Count == hl)) {
			h.flags |= flagBadMsg
		}
		if !h.ok() || st.Count == hl {
			return nil, nil
		}
		return castBytes(in[hl:st.Count], data), nil
	}
	// absorb combines (allreduce) or takes (broadcast) a peer's payload; lower says whether the
	// peer's contribution is the left operand.
	absorb := func(theirs []T, lower bool) {
		switch {
		case theirs == nil:
		case bcast:
			if !have {
				copy(mine, theirs)
				have = true
			}
		case lower || commute:
			fn(theirs, mine)
		default:
			fn(mine, theirs) // we are the left operand: compute into theirs, keep it
			copy(mine, theirs)
		}
	}

	f := newFold(p)
	nr := f.newRank(r)
	if r < 2*f.rem {
		if nr < 0 {
			if err := comm.Send(cc, pack(), r+1, tag); err != nil {
				return err
			}
		} else {
			st, err := comm.Recv(cc, in, r-1, tag)
			theirs, err := unpack(st, err)
			if err != nil {
				return err
			}
			absorb(theirs, true)
		}
	}
	if nr >= 0 {
		for mask := 1; mask < f.pof2; mask <<= 1 {
			peer := f.real(nr ^ mask)
			st, err := comm.Sendrecv(cc, pack(), peer, tag, in, peer, tag)
			theirs, err := unpack(st, err)
			if err != nil {
				return err
			}
			absorb(theirs, peer < r)
		}
	}
	if r < 2*f.rem {
		if nr >= 0 {
			if err := comm.Send(cc, pack(), r-1, tag); err != nil {
				return err
			}
		} else {
			st, err := comm.Recv(cc, in, r+1, tag)
			trunc := isTruncation(err)
			if err != nil && !trunc {
				return err
			}
			// The partner's final header already merged everyone's: take it as ours.
			ph, hl, ok := decodeAny(in[:min(st.Count, len(in))])
			if !ok {
				h.flags |= flagBadMsg
			} else {
				h = ph
				if trunc || st.Count-hl != nb {
					h.flags |= flagBadMsg
				}
			}
			if h.ok() {
				copy(mine, castBytes(in[hl:st.Count], data))
				have = true
			}
		}
	}
	if err := h.verdict(lerr); err != nil {
		return err
	}
	if !have {
		return fmt.Errorf("%w: broadcast data never arrived", ErrMismatch)
	}
	copy(data, mine)
	return nil
}

// isTruncation reports whether err is a receive truncated to the buffer. The target lives
// only on this error path: errors.As moves it to the heap.
func isTruncation(err error) bool {
	if err == nil {
		return false
	}
	var te *comm.TruncateError
	return errors.As(err, &te)
}

// castBytes views b as a []T (b is 8-byte aligned scratch); like is only a type witness.
func castBytes[T comm.Elem](b []byte, like []T) []T {
	_ = like
	sz := elemSize[T]()
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

// recvErr checks a completed receive of want bytes.
func recvErr(st comm.Status, err error, want, src int) error {
	if err != nil {
		return fmt.Errorf("recv from rank %d: %w", src, err)
	}
	if st.Count != want {
		return fmt.Errorf("%w: %d bytes from rank %d, expected %d", ErrMismatch, st.Count, src, want)
	}
	return nil
}

// recvExact receives exactly len(buf) elements from src.
func recvExact[T comm.Elem](cc *comm.Comm, buf []T, src, tag int) error {
	st, err := comm.Recv(cc, buf, src, tag)
	return recvErr(st, err, len(buf)*elemSize[T](), src)
}

// sendrecvExact is Sendrecv that checks the received size.
func sendrecvExact[T comm.Elem](cc *comm.Comm, send []T, dst int, recv []T, src, tag int) error {
	st, err := comm.Sendrecv(cc, send, dst, tag, recv, src, tag)
	return recvErr(st, err, len(recv)*elemSize[T](), src)
}

func sendTo[T comm.Elem](cc *comm.Comm, buf []T, dst, tag int) error {
	if err := comm.Send(cc, buf, dst, tag); err != nil {
		return fmt.Errorf("send to rank %d: %w", dst, err)
	}
	return nil
}
