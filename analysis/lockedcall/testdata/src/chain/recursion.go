package chain

import "sync"

// Recursive helpers: a summary of a function in a cycle is what the whole
// cycle calls, whichever of its functions is summarized first.

type Rec struct {
	mu   sync.Mutex
	cb   func(int)
	done func()
	n    int
}

func NewRec(cb func(int), done func()) *Rec {
	return &Rec{cb: cb, done: done}
}

// RunA summarizes a first, and with it b: b's summary must not stay what b
// saw while a was still being summarized.
func (r *Rec) RunA() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.a(r.n) // want `call of r.a \(it calls r.cb, a field: a → r.cb\) while r.mu is held`
}

// RunB calls the other function of the cycle a → b → a.
func (r *Rec) RunB() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b(r.n) // want `call of r.b \(it calls r.cb, a field: b → a → r.cb\) while r.mu is held`
}

// a and b call each other; only a calls the callback.
func (r *Rec) a(n int) {
	if n > 0 {
		r.b(n - 1)
	}
	r.cb(n)
}

func (r *Rec) b(n int) {
	r.a(n)
}

// Swap passes the callback as swap's second function, which swap calls only
// through its recursive call, as its first.
func (r *Rec) Swap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	swap(r.n, func() {}, r.done) // want `call of swap \(it calls r.done, a field: swap → swap → f\) while r.mu is held`
	swap(r.n, r.done, func() {}) // want `call of swap \(it calls r.done, a field: swap → f\) while r.mu is held`
	swap(r.n, func() {}, func() {})
}

func swap(n int, f, g func()) {
	if n == 0 {
		f()
		return
	}
	swap(n-1, g, f)
}

// Depth recurses, directly and through height, and calls no callback.
func (r *Rec) Depth() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.depth(r.n) + r.height(r.n)
}

func (r *Rec) depth(n int) int {
	if n <= 0 {
		return 0
	}
	return 1 + r.depth(n-1) + r.height(n/2)
}

func (r *Rec) height(n int) int {
	if n <= 1 {
		return n
	}
	return r.depth(n - 1)
}

// Tree locks each node while it walks its children: visit runs under the
// node's lock. Walk summarizes walk before enter is analyzed, and enter's
// call of walk, made under k.mu, must see the whole cycle.
type Tree struct {
	mu    sync.Mutex
	root  *Node
	nodes int
}

type Node struct {
	mu    sync.Mutex
	kids  []*Node
	visit func(*Node)
}

func NewNode(visit func(*Node)) *Node { return &Node{visit: visit} }

func (t *Tree) Walk() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.root.walk() // want `call of t.root.walk \(it calls t.root.visit, a field: walk → n.visit\) while t.mu is held`
}

// Visit walks without the lock: walk is no locked helper.
func (t *Tree) Visit() {
	t.root.walk()
}

func (n *Node) walk() {
	n.visit(n)
	for _, k := range n.kids {
		k.enter()
	}
}

func (n *Node) enter() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.walk() // want `call of n.walk \(it calls n.visit, a field: walk → n.visit\) while n.mu is held`
}

// A Link's drop walks down the list, calling each link's onDrop: the
// summary names the first link's, not one further down each round.
type Link struct {
	next   *Link
	onDrop func()
}

func NewLink(next *Link, onDrop func()) *Link { return &Link{next: next, onDrop: onDrop} }

func (l *Link) drop() {
	if l.next != nil {
		l.next.drop()
	}
	l.onDrop()
}

// Forget drops without the lock: drop is no locked helper.
func Forget(l *Link) { l.drop() }

func (r *Rec) Drop(l *Link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.drop() // want `call of l.drop \(it calls l.onDrop, a field: drop → l.onDrop\) while r.mu is held; if l.onDrop re-enters`
}
