package tokenizer

// pqueue is a binary heap whose top is the element that comes before all others. The merge
// loops of both tokenizers pop the best candidate pair and push at most two new ones per
// merge, which keeps a word of n symbols at O(n log n).
type pqueue[T interface{ before(T) bool }] struct {
	items []T
}

func (q *pqueue[T]) reset() { q.items = q.items[:0] }

func (q *pqueue[T]) len() int { return len(q.items) }

func (q *pqueue[T]) push(x T) {
	q.items = append(q.items, x)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.items[i].before(q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *pqueue[T]) pop() T {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		c := l
		if r := l + 1; r < last && q.items[r].before(q.items[l]) {
			c = r
		}
		if !q.items[c].before(q.items[i]) {
			break
		}
		q.items[i], q.items[c] = q.items[c], q.items[i]
		i = c
	}
	return top
}
