package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// KV cache element types. The quantized ones keep ggml's block layouts, as llama.cpp's
// --cache-type-k/--cache-type-v store them: blocks of 32 elements along a token's row, Q8_0 an
// F16 scale and 32 int8 (34 bytes), Q4_0 an F16 scale and 16 bytes of nibbles (18 bytes).
type kvType uint8

const (
	kvF32 kvType = iota
	kvF16
	kvQ8_0
	kvQ4_0
)

// KVTypeNames lists the accepted KV cache type names.
const KVTypeNames = "f16, f32, q8_0, q4_0"

func parseKVType(s string) (kvType, error) {
	switch s {
	case "", "f16":
		return kvF16, nil
	case "f32":
		return kvF32, nil
	case "q8_0":
		return kvQ8_0, nil
	case "q4_0":
		return kvQ4_0, nil
	}
	return 0, fmt.Errorf("model: KV cache type %q (want %s)", s, KVTypeNames)
}

func (t kvType) String() string {
	return [...]string{"f32", "f16", "q8_0", "q4_0"}[t]
}

// rowBytes is the size of one token's row of width elements.
func (t kvType) rowBytes(width int) int {
	switch t {
	case kvF32:
		return 4 * width
	case kvF16:
		return 2 * width
	case kvQ8_0:
		return width / quant.QK8_0 * quant.BlockQ8_0
	default:
		return width / quant.QK4_0 * quant.BlockQ4_0
	}
}

// checkWidth reports whether rows of width elements can be stored in t: the quantized types
// need whole blocks.
func (t kvType) checkWidth(width int) error {
	if (t == kvQ8_0 || t == kvQ4_0) && width%32 != 0 {
		return fmt.Errorf("model: KV cache type %s stores blocks of 32, but this rank's KV row is %d wide (KV heads x head size): use f16 or f32", t, width)
	}
	return nil
}

// kvBuf is one layer's keys or values: rows of width elements, one per cached token, in one
// of the types (only the slice of its type is set).
type kvBuf struct {
	t     kvType
	width int
	f32   []float32
	f16   []uint16
	q     []byte
	rb    int // bytes per row of q
	// split > 0 (a latent cache in q8_0): only a row's first split elements are Q8_0 blocks,
	// the other width-split follow them as little-endian F32 (see latentRowBytes); vec is
	// store's scratch for them.
	split int
	vec   *quant.Vec
}

func newKVBuf(t kvType, rows, width int) kvBuf {
	return newKVBufSplit(t, rows, width, 0)
}

// latentRowBytes is the size of a latent cache row in q8_0: the kvl latent values in Q8_0
// blocks, then the rope rotary key values in F32. The rotary key stays F32 because its width
// need not be a multiple of 32 (deepseek2's is 64, stories260K upcycled's 8) and llama.cpp
// c392e50 keeps it unquantized until it enters its own cache.
func latentRowBytes(kvl, rope int) int {
	return kvQ8_0.rowBytes(kvl) + 4*rope
}

// newKVBufSplit is newKVBuf with, for split > 0 and t q8_0, the latent cache's row layout.
func newKVBufSplit(t kvType, rows, width, split int) kvBuf {
	b := kvBuf{t: t, width: width, rb: t.rowBytes(width)}
	if split > 0 && t == kvQ8_0 {
		b.split, b.rb, b.vec = split, latentRowBytes(split, width-split), &quant.Vec{}
	}
	switch t {
	case kvF32:
		b.f32 = make([]float32, rows*width)
	case kvF16:
		b.f16 = make([]uint16, rows*width)
	default:
		b.q = make([]byte, rows*b.rb)
	}
	return b
}

// store writes x (width elements) as row r, quantizing it with ggml's reference rules.
func (b *kvBuf) store(r int, x []float32) {
	w := b.width
	switch b.t {
	case kvF32:
		copy(b.f32[r*w:(r+1)*w], x)
	case kvF16:
		quant.F32ToF16s(b.f16[r*w:(r+1)*w], x)
	case kvQ8_0:
		row := b.q[r*b.rb : (r+1)*b.rb]
		if b.split > 0 {
			// The latent is rounded as a product's input is (ggml's quantize_row_q8_0: 127/amax,
			// ties to even), which is how llama.cpp rounds it for attn_kv_b. The reference
			// quantizer (1/(amax/127)) can take an exact tie, x = amax/2, the other way.
			qb := kvQ8_0.rowBytes(b.split)
			_ = b.vec.Load(gguf.Q8_0, x[:b.split]) // split is whole blocks (Load checks)
			copy(row[:qb], b.vec.Q8[:qb])
			for j, v := range x[b.split:w] {
				binary.LittleEndian.PutUint32(row[qb+4*j:], math.Float32bits(v))
			}
			return
		}
		_ = quant.Quantize(gguf.Q8_0, x[:w], row) // sizes are whole blocks (checkWidth)
	case kvQ4_0:
		_ = quant.Quantize(gguf.Q4_0, x[:w], b.q[r*b.rb:(r+1)*b.rb])
	}
}

// rowsOf is the part of b holding rows [r0, r0+n).
func (b *kvBuf) rowsOf(r0, n int) kvBuf {
	s := *b
	switch b.t {
	case kvF32:
		s.f32 = b.f32[r0*b.width : (r0+n)*b.width]
	case kvF16:
		s.f16 = b.f16[r0*b.width : (r0+n)*b.width]
	default:
		s.q = b.q[r0*b.rb : (r0+n)*b.rb]
	}
	return s
}

// copyRows copies n rows of src from row sr to dst at row dr (both of one type and width).
func copyRows(dst *kvBuf, dr int, src *kvBuf, sr, n int) {
	w := src.width
	switch src.t {
	case kvF32:
		copy(dst.f32[dr*w:(dr+n)*w], src.f32[sr*w:(sr+n)*w])
	case kvF16:
		copy(dst.f16[dr*w:(dr+n)*w], src.f16[sr*w:(sr+n)*w])
	default:
		copy(dst.q[dr*src.rb:(dr+n)*src.rb], src.q[sr*src.rb:(sr+n)*src.rb])
	}
}

// bytes is the memory the buffer holds.
func (b *kvBuf) bytes() int64 {
	return int64(len(b.f32))*4 + int64(len(b.f16))*2 + int64(len(b.q))
}

// dotQ is the dot product of x with elements [off, off+len(x)) of a quantized row, computed
// on the quantized values block by block (each block's integer-weighted sum times its scale).
func dotQ(t kvType, row []byte, off int, x []float32) float32 {
	var sum float32
	for i := 0; i < len(x); {
		blk, j := (off+i)/32, (off+i)%32
		n := min(32-j, len(x)-i)
		var acc float32
		if t == kvQ8_0 {
			b := row[blk*quant.BlockQ8_0:]
			qs := b[2+j : 2+j+n]
			for k, v := range qs {
				acc += float32(int8(v)) * x[i+k]
			}
			sum += acc * quant.F16ToF32(binary.LittleEndian.Uint16(b))
		} else {
			b := row[blk*quant.BlockQ4_0:]
			for k := 0; k < n; k++ {
				acc += float32(q4(b, j+k)) * x[i+k]
			}
			sum += acc * quant.F16ToF32(binary.LittleEndian.Uint16(b))
		}
		i += n
	}
	return sum
}

// axpyQ adds a times elements [off, off+len(out)) of a quantized row to out.
func axpyQ(t kvType, out []float32, a float32, row []byte, off int) {
	for i := 0; i < len(out); {
		blk, j := (off+i)/32, (off+i)%32
		n := min(32-j, len(out)-i)
		if j == 0 && n == 32 {
			// A whole block: fixed-size arrays, no bounds checks in the loop.
			o := (*[32]float32)(out[i : i+32])
			if t == kvQ8_0 {
				b := (*[quant.BlockQ8_0]byte)(row[blk*quant.BlockQ8_0:])
				ad := a * quant.F16ToF32(binary.LittleEndian.Uint16(b[:]))
				for k := 0; k < 32; k++ {
					o[k] += ad * float32(int8(b[2+k]))
				}
			} else {
				b := (*[quant.BlockQ4_0]byte)(row[blk*quant.BlockQ4_0:])
				ad := a * quant.F16ToF32(binary.LittleEndian.Uint16(b[:]))
				for k := 0; k < 16; k++ {
					o[k] += ad * float32(int(b[2+k]&0xf)-8)
					o[k+16] += ad * float32(int(b[2+k]>>4)-8)
				}
			}
			i += 32
			continue
		}
		if t == kvQ8_0 {
			b := row[blk*quant.BlockQ8_0:]
			ad := a * quant.F16ToF32(binary.LittleEndian.Uint16(b))
			for k, v := range b[2+j : 2+j+n] {
				out[i+k] += ad * float32(int8(v))
			}
		} else {
			b := row[blk*quant.BlockQ4_0:]
			ad := a * quant.F16ToF32(binary.LittleEndian.Uint16(b))
			for k := 0; k < n; k++ {
				out[i+k] += ad * float32(q4(b, j+k))
			}
		}
		i += n
	}
}

// q4 is element j of a Q4_0 block: low nibbles hold elements 0..15, high ones 16..31, offset 8.
func q4(b []byte, j int) int {
	if j < 16 {
		return int(b[2+j]&0xf) - 8
	}
	return int(b[2+j-16]>>4) - 8
}

// attendKV computes one head's attention output for one query over rows [0,n) of k and v
// (the head's elements at off in each row). Caches of one float type take attend and
// attendHalf. Quantized keys whose heads are whole blocks are scored as llama.cpp scores
// them: the query rounded to Q8_0 blocks, each key block's integer dot product with it
// (quant's SIMD kernels); keys of heads inside a block (head size below 32) are scored on
// their quants against the F32 query. Values are added in their own type with F32 weights.
func attendKV(out, q []float32, k, v *kvBuf, off, n int, sc []float32, scale float32) {
	switch {
	case k.t == kvF16 && v.t == kvF16:
		attendHalf(out, q, k.f16, v.f16, k.width, off, n, sc, scale)
		return
	case k.t == kvF32 && v.t == kvF32:
		attend(out, q, k.f32, v.f32, k.width, off, n, sc, scale)
		return
	}
	hd := len(q)
	mx := float32(math.Inf(-1))
	var qv quant.Vec
	var gt gguf.Type
	blocked := (k.t == kvQ8_0 || k.t == kvQ4_0) && off%32 == 0 && hd%32 == 0
	if blocked {
		gt = gguf.Q8_0
		if k.t == kvQ4_0 {
			gt = gguf.Q4_0
		}
		if qv.Load(gt, q) != nil {
			blocked = false
		}
	}
	bo, be := off/32*(k.rb*32/k.width), (off+hd)/32*(k.rb*32/k.width) // the head's bytes in a row
	for p := 0; p < n; p++ {
		var d float32
		switch {
		case blocked:
			d = quant.Dot(gt, k.q[p*k.rb+bo:p*k.rb+be], &qv)
		case k.t == kvF32:
			row := k.f32[p*k.width+off : p*k.width+off+hd]
			for j, x := range q {
				d += x * row[j]
			}
		case k.t == kvF16:
			row := k.f16[p*k.width+off : p*k.width+off+hd]
			for j, x := range q {
				d += x * quant.F16ToF32(row[j])
			}
		default:
			d = dotQ(k.t, k.q[p*k.rb:(p+1)*k.rb], off, q)
		}
		d *= scale
		sc[p] = d
		mx = max(mx, d)
	}
	var sum float64
	for p := 0; p < n; p++ {
		e := math.Exp(float64(sc[p] - mx))
		sc[p] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	clear(out)
	for p := 0; p < n; p++ {
		w := sc[p] * inv
		switch v.t {
		case kvF32:
			row := v.f32[p*v.width+off : p*v.width+off+hd]
			for j := range out {
				out[j] += w * row[j]
			}
		case kvF16:
			quant.AxpyF16(out, w, v.f16[p*v.width+off:p*v.width+off+hd])
		default:
			axpyQ(v.t, out, w, v.q[p*v.rb:(p+1)*v.rb], off)
		}
	}
}

// KVBytesPerToken is the KV cache memory one token takes on this rank, all layers, keys and
// values (latent attention caches one latent row and no values: KVLoraRank + RopeDim values in
// f16 or f32, or in q8_0 KVLoraRank/32 blocks of 34 bytes and RopeDim F32 values).
func (m *Model) KVBytesPerToken() int64 {
	if c := &m.Cfg; c.KVLoraRank > 0 {
		rb := m.kType.rowBytes(m.kvWidth())
		if m.kType == kvQ8_0 {
			rb = latentRowBytes(c.KVLoraRank, c.RopeDim)
		}
		return int64(len(m.layers)) * int64(rb)
	}
	w := m.kvWidth()
	return int64(len(m.layers)) * int64(m.kType.rowBytes(w)+m.vType.rowBytes(w))
}

// KVRowBytes is the memory one token's row of width elements takes in the KV cache type named
// (one of KVTypeNames); the block types need width to be a whole number of blocks.
func KVRowBytes(name string, width int) (int, error) {
	t, err := parseKVType(name)
	if err != nil {
		return 0, err
	}
	return t.rowBytes(width), nil
}

// KVTypes names the key and value cache types.
func (m *Model) KVTypes() (k, v string) { return m.kType.String(), m.vType.String() }

// KVBlock is a copy of the keys and values of a run of positions of one Cache slot, on this
// rank (its shard of the KV heads), as prefix caching keeps them.
type KVBlock struct {
	n    int
	k, v []kvBuf // per layer
}

// Len is the number of positions in the block.
func (b *KVBlock) Len() int { return b.n }

// Bytes is the memory the block holds.
func (b *KVBlock) Bytes() int64 {
	var s int64
	for i := range b.k {
		s += b.k[i].bytes() + b.v[i].bytes()
	}
	return s
}

// SaveKV copies positions [pos, pos+n) of slot's cache into a new block.
func (m *Model) SaveKV(c *Cache, slot, pos, n int) (*KVBlock, error) {
	if slot < 0 || slot >= c.slots || pos < 0 || n < 1 || pos+n > c.ctx {
		return nil, fmt.Errorf("model: save of %d KV positions at %d of slot %d (cache of %d slots of %d)", n, pos, slot, c.slots, c.ctx)
	}
	b := &KVBlock{n: n, k: make([]kvBuf, len(c.k)), v: make([]kvBuf, len(c.v))}
	for li := range c.k {
		b.k[li] = newKVBufSplit(c.k[li].t, n, c.k[li].width, c.k[li].split)
		b.v[li] = newKVBuf(c.v[li].t, n, c.v[li].width)
		copyRows(&b.k[li], 0, &c.k[li], slot*c.ctx+pos, n)
		copyRows(&b.v[li], 0, &c.v[li], slot*c.ctx+pos, n)
	}
	return b, nil
}

// LoadKV copies a block into slot's cache at positions [pos, pos+b.Len()).
func (m *Model) LoadKV(c *Cache, slot, pos int, b *KVBlock) error {
	if slot < 0 || slot >= c.slots || pos < 0 || pos+b.n > c.ctx {
		return fmt.Errorf("model: load of %d KV positions at %d of slot %d (cache of %d slots of %d)", b.n, pos, slot, c.slots, c.ctx)
	}
	if len(b.k) != len(c.k) || len(b.k) > 0 && (b.k[0].t != c.k[0].t || b.v[0].t != c.v[0].t || b.k[0].width != c.k[0].width || b.k[0].split != c.k[0].split) {
		return fmt.Errorf("model: KV block of another cache layout")
	}
	for li := range c.k {
		copyRows(&c.k[li], slot*c.ctx+pos, &b.k[li], 0, b.n)
		copyRows(&c.v[li], slot*c.ctx+pos, &b.v[li], 0, b.n)
	}
	return nil
}

// SlotBytes is the KV cache memory of one slot on this rank.
func (c *Cache) SlotBytes() int64 {
	var s int64
	for li := range c.k {
		s += c.k[li].bytes() + c.v[li].bytes()
	}
	return s / int64(c.slots)
}
