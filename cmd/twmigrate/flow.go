package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"

	"golang.org/x/tools/go/types/typeutil"
)

func (m *migrator) walk(f *ast.File) {
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		m.visit(n, stack)
		return true
	})
}

func (m *migrator) visit(n ast.Node, stack []ast.Node) {
	switch n := n.(type) {
	case *ast.Ident:
		m.ident(n, stack)
	case *ast.SelectorExpr:
		m.selector(n)
	case *ast.StarExpr:
		if tv, ok := m.info.Types[n]; ok && tv.IsValue() {
			m.slotOf(n) // *t: a time.Timer by value
		}
	case *ast.AssignStmt:
		if len(stack) > 1 {
			if ts, ok := stack[len(stack)-2].(*ast.TypeSwitchStmt); ok && ts.Assign == n {
				return
			}
		}
		if n.Tok != token.ASSIGN && n.Tok != token.DEFINE {
			return
		}
		ds := make([]dest, len(n.Lhs))
		for i, l := range n.Lhs {
			ds[i] = m.destOfExpr(l)
		}
		m.flowAll(ds, n.Rhs, "assigned to a variable of type")
	case *ast.ValueSpec:
		ds := make([]dest, len(n.Names))
		for i, id := range n.Names {
			ds[i] = m.destOfExpr(id)
		}
		m.flowAll(ds, n.Values, "assigned to a variable of type")
	case *ast.ReturnStmt:
		sig := m.enclosingSig(stack)
		if sig == nil || len(n.Results) == 0 {
			return
		}
		ds := make([]dest, sig.Results().Len())
		for i := range ds {
			ds[i] = m.destOfVar(sig.Results().At(i), n.Pos())
		}
		m.flowAll(ds, n.Results, "returned as")
	case *ast.IndexExpr:
		if mt, ok := m.mapType(n.X); ok {
			m.flowKey(mt, n.X, n.Index)
		}
	case *ast.CallExpr:
		m.call(n)
	case *ast.CompositeLit:
		m.compositeLit(n)
	case *ast.SendStmt:
		d := dest{slot: -1, typ: types.Typ[types.Invalid]}
		if ch, ok := types.Unalias(m.info.TypeOf(n.Chan)).Underlying().(*types.Chan); ok {
			d = dest{slot: m.slotOf(n.Chan), typ: ch.Elem()}
		}
		m.flow(d, n.Value, "sent on a channel of")
	case *ast.RangeStmt:
		m.rangeStmt(n)
	case *ast.BinaryExpr:
		if n.Op == token.EQL || n.Op == token.NEQ {
			m.compare(n.X, n.Y)
		}
	case *ast.SwitchStmt:
		if n.Tag != nil {
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					m.compare(n.Tag, e)
				}
			}
		}
	case *ast.CaseClause:
		if v, ok := m.info.Implicits[n].(*types.Var); ok && m.shapeOf(v.Type()).kind != noTimer {
			m.poison(m.varSlot(v, n.Pos()), n.Pos(), "taken out of an interface by a type switch")
		}
	case *ast.FuncLit:
		fi := m.lits[n]
		if fi != nil && fi.why.why == "" && m.sigHasTimer(fi.sig) && !isCalled(stack, len(stack)-1) {
			fi.why = reason{n.Pos(), "a function literal used as a value, whose callers are out of sight"}
		}
	}
}

// isCalled reports whether stack[at] is the function that a call calls.
func isCalled(stack []ast.Node, at int) bool {
	child := stack[at]
	for i := at - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
		case *ast.IndexExpr:
			if p.X != child {
				return false
			}
		case *ast.IndexListExpr:
			if p.X != child {
				return false
			}
		case *ast.CallExpr:
			return p.Fun == child
		default:
			return false
		}
		child = stack[i]
	}
	return false
}

func (m *migrator) enclosingSig(stack []ast.Node) *types.Signature {
	for i := len(stack) - 1; i >= 0; i-- {
		switch f := stack[i].(type) {
		case *ast.FuncLit:
			sig, _ := m.info.TypeOf(f).(*types.Signature)
			return sig
		case *ast.FuncDecl:
			if fn, ok := m.info.Defs[f.Name].(*types.Func); ok {
				return fn.Signature()
			}
			return nil
		}
	}
	return nil
}

// ident handles a use of a name: time.Timer or time.Ticker in a type, a
// function of the time or context package, a function of the package.
func (m *migrator) ident(id *ast.Ident, stack []ast.Node) {
	obj := m.info.Uses[id]
	if obj == nil {
		return
	}
	at := len(stack) - 1
	var ref ast.Expr = id
	if at > 0 {
		if sel, ok := stack[at-1].(*ast.SelectorExpr); ok && sel.Sel == id {
			ref, at = sel, at-1
		}
	}
	switch obj := obj.(type) {
	case *types.TypeName:
		if isTimeType(obj) {
			m.attribute(occurrence{expr: ref, ticker: obj.Name() == "Ticker"}, stack, at)
		}
	case *types.Func:
		if obj.Pkg() == nil {
			return
		}
		called := isCalled(stack, at)
		if obj.Signature().Recv() == nil {
			switch p := obj.Pkg().Path(); {
			case p == "time" && constructors[obj.Name()] != kindNone:
				if !called {
					i := m.exprSlot(ref)
					m.slots[i].refs++
					m.poison(i, ref.Pos(), "time.%s used as a function value: its type would change", obj.Name())
				}
			case renamed[p][obj.Name()]:
				m.renames = append(m.renames, rename{ref: ref, pkg: p, name: obj.Name()})
			}
		}
		if obj.Pkg() == m.pass.Pkg && !called {
			if fi := m.funcs[obj.Origin()]; fi != nil && fi.why.why == "" && m.sigHasTimer(fi.sig) {
				fi.why = reason{ref.Pos(), fmt.Sprintf("%s is used as a function value, whose callers are out of sight", fi.name)}
			}
		}
	}
}

// selector records the reads of C of a *time.Timer: a time.AfterFunc
// timer's C is nil, and timingwheel.Timer has none.
func (m *migrator) selector(sel *ast.SelectorExpr) {
	s := m.info.Selections[sel]
	if s == nil || s.Kind() != types.FieldVal || s.Obj().Name() != "C" || s.Obj().Pkg() == nil || s.Obj().Pkg().Path() != "time" {
		return
	}
	if n, ok := types.Unalias(derefType(s.Recv())).(*types.Named); ok && n.Obj().Name() == "Timer" {
		if i := m.slotOf(sel.X); i >= 0 {
			m.slots[i].cReads = append(m.slots[i].cReads, sel.Pos())
		}
	}
}

// slotOf returns the slot of the value of an expression whose type holds
// a timer, or -1.
func (m *migrator) slotOf(e ast.Expr) int {
	e = ast.Unparen(e)
	if i, ok := m.exprs[e]; ok {
		return i
	}
	if id, ok := e.(*ast.Ident); ok {
		if v, ok := m.info.ObjectOf(id).(*types.Var); ok && id.Name != "_" {
			return m.varSlot(v, id.Pos())
		}
		return -1
	}
	t := m.info.TypeOf(e)
	if t == nil {
		return -1
	}
	sh := m.shapeOf(t)
	if sh.kind == noTimer {
		return -1
	}
	s := -1
	switch x := e.(type) {
	case *ast.SelectorExpr:
		if sel := m.info.Selections[x]; sel != nil {
			if sel.Kind() == types.FieldVal {
				s = m.varSlot(sel.Obj().(*types.Var), x.Sel.Pos())
			}
		} else if v, ok := m.info.Uses[x.Sel].(*types.Var); ok {
			s = m.varSlot(v, x.Sel.Pos())
		}
	case *ast.IndexExpr:
		if tv := m.info.Types[x.X]; tv.IsValue() {
			s = m.slotOf(x.X)
		}
	case *ast.SliceExpr:
		s = m.slotOf(x.X)
	case *ast.StarExpr:
		s = m.slotOf(x.X)
	case *ast.UnaryExpr:
		if x.Op == token.AND || x.Op == token.ARROW {
			s = m.slotOf(x.X)
		}
	case *ast.CallExpr:
		s = m.callSlot(x)
	case *ast.CompositeLit:
		s = m.exprSlot(x)
	case *ast.TypeAssertExpr:
		s = m.exprSlot(x)
		m.poison(s, x.Pos(), "taken out of an interface by a type assertion")
	}
	if s < 0 {
		s = m.exprSlot(e)
		m.poison(s, e.Pos(), "a timer reached in a way twmigrate does not follow")
	}
	if sh.kind == opaque {
		m.poison(s, e.Pos(), "%s", sh.why)
	}
	if sh.kind == chain && sh.named != nil {
		// A value of a named type of the package (a conversion to it,
		// say) moves with the type.
		m.union(s, m.typeSlot(sh.named))
	}
	m.exprs[e] = s
	return s
}

// callSlot is the slot of the value a call returns.
func (m *migrator) callSlot(call *ast.CallExpr) int {
	fun := ast.Unparen(call.Fun)
	if tv := m.info.Types[fun]; tv.IsType() {
		s := m.exprSlot(call)
		if len(call.Args) == 1 {
			m.union(s, m.slotOf(call.Args[0]))
		}
		return s
	}
	switch builtinName(m.info, fun) {
	case "make":
		return m.exprSlot(call)
	case "new":
		s := m.exprSlot(call)
		if len(call.Args) == 1 {
			if n, ok := types.Unalias(m.info.TypeOf(call.Args[0])).(*types.Named); ok && isTimeType(n.Obj()) {
				m.poison(s, call.Pos(), "new(time.%s) makes a timer that no constructor started", n.Obj().Name())
			}
		}
		return s
	case "append":
		s := m.exprSlot(call)
		for _, a := range call.Args {
			m.union(s, m.slotOf(a))
		}
		return s
	case "":
	default:
		return -1
	}
	if k, fun := m.constructor(call); k != kindNone {
		s := m.exprSlot(call)
		m.slots[s].sources = append(m.slots[s].sources, source{call: call, fun: fun, kind: k})
		return s
	}
	if sig := m.localSig(call); sig != nil {
		if sig.Results().Len() == 1 {
			return m.chainSlot(sig.Results().At(0), call.Pos())
		}
		return -1
	}
	s := m.exprSlot(call)
	m.poison(s, call.Pos(), "%s", m.madeBy(call))
	return s
}

// constructor reports whether call calls time.AfterFunc, NewTimer or
// NewTicker, and the expression that names it.
func (m *migrator) constructor(call *ast.CallExpr) (kind, ast.Expr) {
	fn := typeutil.StaticCallee(m.info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "time" || fn.Signature().Recv() != nil {
		return kindNone, nil
	}
	return constructors[fn.Name()], ast.Unparen(call.Fun)
}

// localSig returns the signature of the function a call calls, if the
// package declares it (a function literal called in place included) and
// so the migration follows the values through it.
func (m *migrator) localSig(call *ast.CallExpr) *types.Signature {
	if lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok {
		sig, _ := m.info.TypeOf(lit).(*types.Signature)
		return sig
	}
	fn := typeutil.StaticCallee(m.info, call)
	if fn == nil || fn.Pkg() != m.pass.Pkg {
		return nil
	}
	if _, ok := m.funcs[fn.Origin()]; ok {
		return fn.Origin().Signature()
	}
	return nil
}

// calleeName names what a call calls that the migration does not follow.
func (m *migrator) calleeName(call *ast.CallExpr) string {
	switch fn := typeutil.Callee(m.info, call).(type) {
	case *types.Func:
		if recv := fn.Signature().Recv(); recv != nil {
			if types.IsInterface(recv.Type()) {
				return "interface method " + fn.Name() + ", whose implementations are out of sight"
			}
			return fmt.Sprintf("method %s of package %s, and twmigrate does not follow timers across packages", fn.Name(), pathOf(fn))
		}
		if fn.Pkg() == m.pass.Pkg {
			return "the generic function " + fn.Name()
		}
		return fmt.Sprintf("%s.%s of package %s, and twmigrate does not follow timers across packages", fn.Pkg().Name(), fn.Name(), pathOf(fn))
	case *types.Var:
		return "the function value " + fn.Name() + ", whose functions are out of sight"
	}
	return "a function value, whose functions are out of sight"
}

func (m *migrator) madeBy(call *ast.CallExpr) string {
	return "returned by " + m.calleeName(call)
}

// call follows the arguments of a call into the parameters of the
// function, when the package declares it; an argument that goes anywhere
// else keeps its type.
func (m *migrator) call(call *ast.CallExpr) {
	if t := m.info.TypeOf(call); t != nil && m.shapeOf(t).kind != noTimer {
		m.slotOf(call) // a constructor is a source even when its result is dropped
	}
	fun := ast.Unparen(call.Fun)
	if tv := m.info.Types[fun]; tv.IsType() {
		if len(call.Args) == 1 && m.shapeOf(tv.Type).kind != chain {
			m.flow(dest{slot: -1, typ: tv.Type}, call.Args[0], "converted to")
		}
		return
	}
	switch builtinName(m.info, fun) {
	case "copy":
		if len(call.Args) == 2 {
			m.union(m.slotOf(call.Args[0]), m.slotOf(call.Args[1]))
		}
		return
	case "delete":
		if len(call.Args) == 2 {
			if mt, ok := m.mapType(call.Args[0]); ok {
				m.flowKey(mt, call.Args[0], call.Args[1])
			}
		}
		return
	case "":
	default:
		return // append, make and new are slots; len, cap, delete, close, clear and print take no timer anywhere
	}
	if k, _ := m.constructor(call); k != kindNone {
		return
	}
	if sig := m.localSig(call); sig != nil {
		params := sig.Params()
		if len(call.Args) == 1 && params.Len() > 1 {
			ds := make([]dest, params.Len())
			for i := range ds {
				ds[i] = m.destOfVar(params.At(i), call.Pos())
			}
			m.flowTuple(ds, call.Args[0], "passed as")
			return
		}
		for i, a := range call.Args {
			var p *types.Var
			switch {
			case sig.Variadic() && i >= params.Len()-1:
				p = params.At(params.Len() - 1)
				if !call.Ellipsis.IsValid() {
					// an element of the variadic slice
					d := m.destOfVar(p, a.Pos())
					if sl, ok := p.Type().(*types.Slice); ok && d.slot < 0 {
						d.typ = sl.Elem()
					}
					m.flow(d, a, "passed as")
					continue
				}
			case i < params.Len():
				p = params.At(i)
			default:
				continue
			}
			m.flow(m.destOfVar(p, a.Pos()), a, "passed as")
		}
		return
	}
	for _, a := range call.Args {
		if s := m.slotOf(a); s >= 0 {
			m.poison(s, a.Pos(), "passed to %s", m.calleeName(call))
		}
	}
}

// A dest is where a value goes: a slot, or a type that is not a slot of
// one (an interface, a type parameter).
type dest struct {
	slot int
	typ  types.Type
	skip bool // the blank identifier
}

func (m *migrator) destOfExpr(lhs ast.Expr) dest {
	if id, ok := ast.Unparen(lhs).(*ast.Ident); ok && id.Name == "_" {
		return dest{slot: -1, skip: true}
	}
	t := m.info.TypeOf(lhs)
	if t == nil {
		return dest{slot: -1, skip: true}
	}
	return dest{slot: m.slotOf(lhs), typ: t}
}

func (m *migrator) destOfVar(v *types.Var, at token.Pos) dest {
	return dest{slot: m.chainSlot(v, at), typ: v.Type()}
}

// flowAll follows an assignment of values to dests: one to one, or the
// results of one call (or comma-ok expression) to several.
func (m *migrator) flowAll(ds []dest, values []ast.Expr, how string) {
	switch {
	case len(values) == len(ds):
		for i, v := range values {
			m.flow(ds[i], v, how)
		}
	case len(values) == 1:
		m.flowTuple(ds, values[0], how)
	}
}

// flow follows a value into a dest.
func (m *migrator) flow(d dest, src ast.Expr, how string) {
	if d.skip {
		return
	}
	s := m.slotOf(src)
	if s < 0 {
		if d.slot < 0 {
			m.unifyStructs(d.typ, m.info.TypeOf(src), 0)
			if d.typ != nil && types.IsInterface(d.typ) {
				m.keepUnnamedFields(m.info.TypeOf(src), src.Pos(), 0)
			}
		}
		return
	}
	if d.slot >= 0 {
		m.union(d.slot, s)
		return
	}
	if m.shapeOf(d.typ).kind == chain {
		// A timer's type, but no place of the package's: a field or
		// parameter of a generic type or function.
		m.poison(s, src.Pos(), "%s %s, which a type parameter holds", how, m.typeString(d.typ))
		return
	}
	m.poison(s, src.Pos(), "%s %s", how, m.typeString(d.typ))
}

// keepUnnamedFields keeps on the time package the timer fields of a value
// of an unnamed struct type (or a pointer to one) put in an interface: a
// type assertion elsewhere names the struct type again, with fields of its
// own, and would stop matching if one side's fields changed type.
func (m *migrator) keepUnnamedFields(t types.Type, pos token.Pos, depth int) {
	if t == nil || depth > 8 {
		return
	}
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	st, ok := t.(*types.Struct)
	if !ok {
		return
	}
	for f := range st.Fields() {
		if m.shapeOf(f.Type()).kind != noTimer {
			m.poison(m.varSlot(f, f.Pos()), pos, "put in an interface in a value of an unnamed struct type")
		}
		m.keepUnnamedFields(f.Type(), pos, depth+1)
	}
}

func (m *migrator) flowTuple(ds []dest, rhs ast.Expr, how string) {
	rhs = ast.Unparen(rhs)
	call, ok := rhs.(*ast.CallExpr)
	if !ok { // v, ok := m[k], <-ch or x.(T)
		if len(ds) > 0 {
			m.flow(ds[0], rhs, how)
		}
		return
	}
	if sig := m.localSig(call); sig != nil && sig.Results().Len() == len(ds) {
		for i, d := range ds {
			r := m.chainSlot(sig.Results().At(i), call.Pos())
			switch {
			case d.skip:
			case d.slot >= 0 && r >= 0:
				m.union(d.slot, r)
			case r >= 0:
				m.poison(r, call.Pos(), "%s %s", how, m.typeString(d.typ))
			case d.slot >= 0:
				m.poison(d.slot, call.Pos(), "returned by %s", m.calleeName(call))
			}
		}
		return
	}
	for _, d := range ds {
		if !d.skip && d.slot >= 0 {
			m.poison(d.slot, call.Pos(), "%s", m.madeBy(call))
		}
	}
}

func (m *migrator) typeString(t types.Type) string {
	return types.TypeString(t, types.RelativeTo(m.pass.Pkg))
}

// unifyStructs joins the fields of two struct types, declared apart,
// through which one value flows (struct{ t *time.Timer } literals written
// twice, and assigned one to the other).
func (m *migrator) unifyStructs(a, b types.Type, depth int) {
	if a == nil || b == nil || depth > 8 {
		return
	}
	a, b = types.Unalias(a), types.Unalias(b)
	if types.Identical(a, b) {
		return // the same type: the same fields
	}
	// Else the fields of both flow into each other: a conversion between
	// two named types with the same fields, or a value of an unnamed type
	// given to a named one.
	switch x := a.Underlying().(type) {
	case *types.Pointer, *types.Slice, *types.Array, *types.Map, *types.Chan:
		// A container: where b is one of the same kind, their element
		// types (a map's values) flow one into the other.
		type container interface{ Elem() types.Type }
		if y := b.Underlying(); reflect.TypeOf(y) == reflect.TypeOf(x) {
			m.unifyStructs(x.(container).Elem(), y.(container).Elem(), depth+1)
		}
	case *types.Struct:
		y, ok := b.Underlying().(*types.Struct)
		if !ok || x == y || x.NumFields() != y.NumFields() {
			return
		}
		for i := range x.NumFields() {
			fx, fy := x.Field(i), y.Field(i)
			if m.shapeOf(fx.Type()).kind != noTimer {
				m.union(m.varSlot(fx, fx.Pos()), m.varSlot(fy, fy.Pos()))
			}
			m.unifyStructs(fx.Type(), fy.Type(), depth+1)
		}
	}
}

func (m *migrator) compositeLit(lit *ast.CompositeLit) {
	t := m.info.TypeOf(lit)
	if t == nil {
		return
	}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		for i, el := range lit.Elts {
			var f *types.Var
			val := el
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok {
					f, _ = m.info.Uses[id].(*types.Var)
				}
				val = kv.Value
			} else if i < u.NumFields() {
				f = u.Field(i)
			}
			if f != nil {
				m.flow(m.destOfVar(f, val.Pos()), val, "stored as")
			}
		}
	case *types.Slice, *types.Array, *types.Map:
		elem := u.(interface{ Elem() types.Type }).Elem()
		s := -1
		if m.shapeOf(t).kind != noTimer {
			s = m.slotOf(lit)
		}
		for _, el := range lit.Elts {
			val := el
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				val = kv.Value
				if mt, ok := u.(*types.Map); ok {
					m.flowKey(mt, lit, kv.Key)
				}
			}
			if inner, ok := val.(*ast.CompositeLit); ok && inner.Type == nil && s >= 0 {
				m.exprs[inner] = s // an elided type: the same type expression
			}
			m.flow(dest{slot: s, typ: elem}, val, "stored as")
		}
	}
}

func (m *migrator) mapType(x ast.Expr) (*types.Map, bool) {
	t := m.info.TypeOf(x)
	if t == nil {
		return nil, false
	}
	mt, ok := t.Underlying().(*types.Map)
	return mt, ok
}

// flowKey follows a key into a map: a map whose keys hold timers is
// opaque, and joining the key to it spreads the poison; a key of an
// interface type holds the timer in an interface.
func (m *migrator) flowKey(mt *types.Map, mapExpr, key ast.Expr) {
	d := dest{slot: -1, typ: mt.Key()}
	if m.shapeOf(mt.Key()).kind != noTimer {
		d.slot = m.slotOf(mapExpr)
	}
	m.flow(d, key, "used as a map key of type")
}

func (m *migrator) rangeStmt(n *ast.RangeStmt) {
	t := m.info.TypeOf(n.X)
	if t == nil {
		return
	}
	u := derefType(t).Underlying()
	var into ast.Expr
	switch u.(type) {
	case *types.Map, *types.Slice, *types.Array:
		into = n.Value
	case *types.Chan:
		into = n.Key
	case *types.Signature:
		for _, e := range []ast.Expr{n.Key, n.Value} {
			if e != nil {
				if d := m.destOfExpr(e); d.slot >= 0 {
					m.poison(d.slot, e.Pos(), "produced by a range-over-func iterator, whose values come from out of sight")
				}
			}
		}
		return
	}
	if into == nil {
		return
	}
	d := m.destOfExpr(into)
	if d.skip {
		return
	}
	x := m.slotOf(n.X)
	switch {
	case d.slot >= 0 && x >= 0:
		m.union(d.slot, x)
	case x >= 0:
		m.poison(x, into.Pos(), "assigned to a variable of type %s", m.typeString(d.typ))
	}
}

// compare joins the two sides of == or !=: a timer compared with another
// must keep its type; compared with an interface, it keeps the time
// package's type.
func (m *migrator) compare(x, y ast.Expr) {
	a, b := m.slotOf(x), m.slotOf(y)
	switch {
	case a >= 0 && b >= 0:
		m.union(a, b)
	case a >= 0 && !m.isNil(y):
		m.poison(a, x.Pos(), "compared with a value of type %s", m.typeString(m.info.TypeOf(y)))
	case b >= 0 && !m.isNil(x):
		m.poison(b, y.Pos(), "compared with a value of type %s", m.typeString(m.info.TypeOf(x)))
	case a < 0 && b < 0:
		m.unifyStructs(m.info.TypeOf(x), m.info.TypeOf(y), 0) // two structs' fields
	}
}

func (m *migrator) isNil(e ast.Expr) bool {
	return m.info.Types[ast.Unparen(e)].IsNil()
}
