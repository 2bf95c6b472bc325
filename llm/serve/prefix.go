package serve

import (
	"container/list"
	"encoding/binary"
	"fmt"

	"github.com/gorun-hpc/gorun/llm/model"
)

// Prefix caching across slots: when a request ends, the full blocks of its slot's KV cache
// (prompt and generated tokens) are copied into a store of blocks, indexed by rank 0 as a trie
// keyed by each block's tokens, so that a block is found only under the exact token prefix
// that produced it. A new request finds the longest chain of blocks its prompt starts with and
// has them copied into its slot instead of feeding those tokens. Rank 0 alone decides; the
// copies (save, load, drop) travel in the step plans, so every rank keeps its own shard of each
// block, applied in the same order. Under the memory budget the least recently used block goes
// first; a block is used after all its descendants (see touch), so that block is always a leaf.

// DefaultCacheRAM is the prefix cache budget per rank when none is given (as llama-server's
// --cache-ram).
const DefaultCacheRAM = 8 << 30

// prefixBlock is the number of tokens in one cached block.
const prefixBlock = 32

// Block operations in a step plan: kind, id, slot, pos, tokens.
const (
	blockSave = 1 // copy slot positions [pos, pos+tokens) into a new block id
	blockLoad = 2 // copy block id into slot at pos
	blockDrop = 3 // forget block id
)

type pcNode struct {
	id       int32
	parent   *pcNode
	key      string
	children map[string]*pcNode
	elem     *list.Element
}

// prefixCache is rank 0's index of the block store.
type prefixCache struct {
	block      int
	budget     int64 // bytes of blocks on rank 0
	blockBytes int64
	root       pcNode
	lru        *list.List // of *pcNode, least recently used first
	nextID     int32
	ops        []int32 // block operations not yet sent
	evictions  int
}

func newPrefixCache(budget, bytesPerToken int64, block int) *prefixCache {
	return &prefixCache{block: block, budget: budget, blockBytes: bytesPerToken * int64(block), lru: list.New()}
}

func blockKey(toks []int32) string {
	b := make([]byte, 4*len(toks))
	for i, t := range toks {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(t))
	}
	return string(b)
}

// bytes is the memory of the blocks held (rank 0's shard).
func (c *prefixCache) bytes() int64 { return int64(c.lru.Len()) * c.blockBytes }

// match returns the chain of blocks prompt starts with, marking them used.
func (c *prefixCache) match(prompt []int32) []*pcNode {
	var path []*pcNode
	n := &c.root
	for k := 0; (k+1)*c.block <= len(prompt); k++ {
		ch := n.children[blockKey(prompt[k*c.block:(k+1)*c.block])]
		if ch == nil {
			break
		}
		path = append(path, ch)
		n = ch
	}
	c.touch(path)
	return path
}

// touch marks a chain used, deepest first, so that every block is more recent than its
// descendants.
func (c *prefixCache) touch(path []*pcNode) {
	for i := len(path) - 1; i >= 0; i-- {
		c.lru.MoveToBack(path[i].elem)
	}
}

// insert adds the full blocks of toks, which slot's cache holds at positions 0.., queuing a
// save for each new one and evicting least recently used blocks to stay in budget. It stops
// early when the budget cannot hold another block besides this chain.
func (c *prefixCache) insert(toks []int32, slot int) {
	var path []*pcNode
	n := &c.root
	k := 0
	for ; (k+1)*c.block <= len(toks); k++ {
		ch := n.children[blockKey(toks[k*c.block:(k+1)*c.block])]
		if ch == nil {
			break
		}
		path = append(path, ch)
		n = ch
	}
	c.touch(path)
	for ; (k+1)*c.block <= len(toks); k++ {
		for c.bytes()+c.blockBytes > c.budget {
			if !c.evict(len(path)) {
				c.touch(path)
				return
			}
		}
		key := blockKey(toks[k*c.block : (k+1)*c.block])
		ch := &pcNode{id: c.nextID, parent: n, key: key}
		c.nextID++
		if n.children == nil {
			n.children = map[string]*pcNode{}
		}
		n.children[key] = ch
		ch.elem = c.lru.PushBack(ch)
		c.ops = append(c.ops, blockSave, ch.id, int32(slot), int32(k*c.block), int32(c.block))
		path = append(path, ch)
		n = ch
	}
	c.touch(path)
}

// evict drops the least recently used block unless only the chain being inserted (the last
// protect blocks used) is left.
func (c *prefixCache) evict(protect int) bool {
	if c.lru.Len() <= protect {
		return false
	}
	old := c.lru.Front().Value.(*pcNode)
	if len(old.children) > 0 {
		// Cannot happen while touch keeps ancestors more recent; refuse rather than orphan.
		return false
	}
	c.lru.Remove(old.elem)
	delete(old.parent.children, old.key)
	c.ops = append(c.ops, blockDrop, old.id, 0, 0, 0)
	c.evictions++
	return true
}

// load queues copying blocks [from, len(path)) of a matched chain into slot.
func (c *prefixCache) load(path []*pcNode, from, slot int) {
	for k := from; k < len(path); k++ {
		c.ops = append(c.ops, blockLoad, path[k].id, int32(slot), int32(k*c.block), int32(c.block))
	}
}

// take returns the queued operations and clears the queue.
func (c *prefixCache) take() []int32 {
	ops := c.ops
	c.ops = nil
	return ops
}

// blockStore is every rank's set of saved blocks, changed only by plan operations.
type blockStore map[int32]*model.KVBlock

// apply runs a plan's block operations (5 words each) in order.
func (s blockStore) apply(m *model.Model, cache *model.Cache, ops []int32) error {
	for i := 0; i+5 <= len(ops); i += 5 {
		kind, id, slot, pos, n := ops[i], ops[i+1], int(ops[i+2]), int(ops[i+3]), int(ops[i+4])
		switch kind {
		case blockSave:
			if _, dup := s[id]; dup {
				return fmt.Errorf("plan: block %d saved twice", id)
			}
			b, err := m.SaveKV(cache, slot, pos, n)
			if err != nil {
				return err
			}
			s[id] = b
		case blockLoad:
			b := s[id]
			if b == nil || b.Len() != n {
				return fmt.Errorf("plan: load of unknown block %d", id)
			}
			if err := m.LoadKV(cache, slot, pos, b); err != nil {
				return err
			}
		case blockDrop:
			if s[id] == nil {
				return fmt.Errorf("plan: drop of unknown block %d", id)
			}
			delete(s, id)
		default:
			return fmt.Errorf("plan: block operation %d", kind)
		}
	}
	return nil
}
