package lockedcall

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// findingKind is the shape of code a finding reports.
type findingKind int

const (
	callUnderLock     findingKind = iota // fn() while mu is held
	closureUnderLock                     // step() while mu is held, and step calls fn
	rangeUnderLock                       // for x := range seq while mu is held
	deferBeforeUnlock                    // defer fn() after defer mu.Unlock()
	deferAtReturn                        // defer fn() that runs as the function returns holding mu
	passToLocked                         // F(fn), where F's package calls fn under its lock (an obligation)
	storeToLocked                        // x.F = fn, where F's package calls x.F under its lock
	reentryUnderLock                     // a call, under mu, of the module's code that locks mu again
)

// finding is one call of outside code under a lock, before it is rendered.
type finding struct {
	kind      findingKind
	pos       token.Pos // the call's '(' (or the for of a range loop)
	rangeStmt *ast.RangeStmt
	out       origin
	method    string    // for an interface method call: the method
	inner     *finding  // for a closure: what it calls from outside
	alts      []finding // other things the closure calls from outside, in case inner is reported elsewhere
	calls     *outCall  // for a static call: what its callee calls from outside
	step      int       // for a deferred call: its place in the order deferred calls run
	note      string    // why the locks are held where that is not plain: a locked helper, a waited-for goroutine
	locks     []heldLock
	// val is the called value, seen from vctx, for a plain call: an
	// internal package traces it to its exported API (see sources.go).
	val   ssa.Value
	vctx  *funcCtx
	where *ssa.Function // the function analyzed, for an obligation's chain
	// oblig is the obligation a passToLocked or storeToLocked finding
	// breaks, and target the argument passed or the field stored in.
	oblig  *Obligation
	target string
	// reentry, when set, proves that what is called locks a held mutex
	// again: the finding is of the re-entry class.
	reentry *reentryProof
}

// subject returns what a finding calls, as the source spells it, what that is,
// and the function that would re-enter.
func (c *checker) subject(fd *finding) (text, what, reenters string) {
	switch {
	case fd.rangeStmt != nil:
		text = types.ExprString(fd.rangeStmt.X)
		return text, fd.out.describe(), text
	case fd.inner != nil && fd.inner.calls != nil && c.callAt(fd.inner.pos) == nil:
		// A wrapper's call (a method value's): the chain says it all.
		return c.calleeText(fd.pos), "a closure that " + strings.TrimPrefix(describeChain(fd.inner.calls), "it "), fd.inner.calls.text
	case fd.inner != nil:
		innerText, innerWhat, innerReenters := c.subject(fd.inner)
		return c.calleeText(fd.pos), "a closure that calls " + innerText + ", " + innerWhat, innerReenters
	case fd.calls != nil:
		return c.calleeText(fd.pos), describeChain(fd.calls), fd.calls.text
	case fd.method != "":
		text = c.calleeText(fd.pos)
		return text, "an interface method; the receiver is " + fd.out.describe(), text
	}
	text = c.calleeText(fd.pos)
	return text, fd.out.describe(), text
}

// calleeText is the called expression at the call whose '(' is at lparen.
func (c *checker) calleeText(lparen token.Pos) string {
	call := c.callAt(lparen)
	if call == nil {
		return "a function value"
	}
	if _, lit := ast.Unparen(call.Fun).(*ast.FuncLit); lit {
		return "a func literal"
	}
	return types.ExprString(call.Fun)
}

// message renders a finding, e.g. "call of fn (a parameter) while o.mu is
// held; if fn re-enters, this deadlocks".
func (c *checker) message(fd *finding) string {
	if fd.oblig != nil {
		return c.obligationMessage(fd)
	}
	if fd.reentry != nil {
		return c.reentryMessage(fd)
	}
	text, what, reenters := c.subject(fd)
	switch fd.kind {
	case rangeUnderLock:
		return fmt.Sprintf("range over %s (%s) runs the iterator while %s; if %s re-enters, this deadlocks",
			text, what, describeLocks(fd.locks), reenters)
	case deferBeforeUnlock:
		names := make([]string, len(fd.locks))
		for i, h := range fd.locks {
			names[i] = h.name
		}
		return fmt.Sprintf("deferred call of %s (%s) runs before the deferred unlock of %s; if %s re-enters, this deadlocks",
			text, what, strings.Join(names, " and "), reenters)
	case deferAtReturn:
		return fmt.Sprintf("deferred call of %s (%s) runs at return while %s; if %s re-enters, this deadlocks",
			text, what, describeLocks(fd.locks), reenters)
	}
	held := describeLocks(fd.locks)
	if fd.note != "" {
		held += " (" + fd.note + ")"
	}
	return fmt.Sprintf("call of %s (%s) while %s; if %s re-enters, this deadlocks",
		text, what, held, reenters)
}

// reportPos is where a finding is reported: the start of the call expression,
// or the for keyword of a range loop.
func (c *checker) reportPos(fd *finding) token.Pos {
	if fd.rangeStmt != nil {
		return fd.rangeStmt.For
	}
	if fd.kind == storeToLocked {
		if target, _ := c.storeExpr(fd.pos); target != nil {
			return target.Pos()
		}
	}
	if call := c.callAt(fd.pos); call != nil {
		return call.Pos()
	}
	return fd.pos
}

// reportAll reports the findings that no directive suppresses, once each, and
// every //lockedcall:ok directive that gives no reason.
func (c *checker) reportAll(findings []finding) {
	dirs := c.directives()
	seen := map[string]bool{}
	for i := range findings {
		fd := &findings[i]
		pos := c.reportPos(fd)
		if !pos.IsValid() {
			continue
		}
		msg := c.message(fd)
		key := fmt.Sprint(pos, msg)
		if seen[key] || dirs.suppresses(c.pass.Fset.Position(pos)) {
			continue
		}
		seen[key] = true
		c.pass.Report(analysis.Diagnostic{Pos: pos, Message: msg})
	}
	for _, bare := range dirs.bare {
		c.pass.Report(analysis.Diagnostic{
			Pos:     bare,
			Message: "//lockedcall:ok needs a reason: say why the call cannot re-enter, e.g. //lockedcall:ok fn only reads the table",
		})
	}
}

// directiveSet holds the suppressing comments of a package by file and line.
type directiveSet struct {
	lines map[string]map[int]directivePlace // file name -> line -> where a directive is
	bare  []token.Pos                       // //lockedcall:ok directives without a reason
}

// directivePlace says whether a directive ends a line of code or stands on a
// line of its own; only the latter also covers the line below.
type directivePlace int

const (
	trailing directivePlace = iota + 1
	ownLine
)

// suppresses reports whether a directive on the finding's line, or alone on
// the line above, suppresses it.
func (d *directiveSet) suppresses(pos token.Position) bool {
	lines := d.lines[pos.Filename]
	return lines[pos.Line] != 0 || lines[pos.Line-1] == ownLine
}

// directives collects //lockedcall:ok and //nolint:lockedcall comments. A
// //lockedcall:ok without a reason still suppresses, but is itself reported,
// so that one diagnostic says what to fix.
func (c *checker) directives() *directiveSet {
	if c.dirSet != nil {
		return c.dirSet
	}
	d := &directiveSet{lines: map[string]map[int]directivePlace{}}
	c.dirSet = d
	for _, file := range c.pass.Files {
		for _, group := range file.Comments {
			for _, comment := range group.List {
				if !strings.Contains(comment.Text, "lockedcall") && !strings.Contains(comment.Text, "nolint") {
					continue
				}
				suppresses, bare := parseDirective(comment.Text)
				if !suppresses {
					continue
				}
				pos := c.pass.Fset.Position(comment.Slash)
				if d.lines[pos.Filename] == nil {
					d.lines[pos.Filename] = map[int]directivePlace{}
				}
				d.lines[pos.Filename][pos.Line] = c.placeOf(pos)
				if bare {
					d.bare = append(d.bare, comment.Slash)
				}
			}
		}
	}
	return d
}

// placeOf says whether the comment at pos is the first thing on its line.
func (c *checker) placeOf(pos token.Position) directivePlace {
	if c.pass.ReadFile == nil {
		return ownLine
	}
	content, err := c.pass.ReadFile(pos.Filename)
	if err != nil || pos.Offset > len(content) {
		return ownLine
	}
	lineStart := bytes.LastIndexByte(content[:pos.Offset], '\n') + 1
	if len(bytes.TrimSpace(content[lineStart:pos.Offset])) == 0 {
		return ownLine
	}
	return trailing
}

// parseDirective recognizes "//lockedcall:ok <reason>" and golangci-lint's
// "//nolint", "//nolint:all" and "//nolint:a,lockedcall,b" (an explanation
// may follow after " //"). bare is true for a lockedcall:ok with no reason.
func parseDirective(text string) (suppresses, bare bool) {
	body := strings.TrimSpace(strings.TrimPrefix(text, "//"))
	if rest, ok := strings.CutPrefix(body, "lockedcall:ok"); ok {
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return false, false // "lockedcall:okay" is not the directive
		}
		return true, strings.TrimSpace(rest) == ""
	}
	rest, ok := strings.CutPrefix(body, "nolint")
	if !ok {
		return false, false
	}
	if rest == "" || rest[0] == ' ' || rest[0] == '\t' {
		return true, false // bare //nolint silences every linter
	}
	if rest[0] != ':' {
		return false, false
	}
	list, _, _ := strings.Cut(rest[1:], " ")
	for _, name := range strings.Split(list, ",") {
		if name == "lockedcall" || name == "all" {
			return true, false
		}
	}
	return false, false
}
