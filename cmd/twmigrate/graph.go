package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// A slot is a place that holds a timer: a variable, a field, a parameter
// or result, a named type, or an expression that makes a value of a type
// with a timer in it (a conversion, a composite literal, make). Slots
// through which a value flows, or that one type expression declares, are
// joined into one component with union-find: a component's timers all
// change type together, or none does.
//
// Each type that a slot holds has exactly one *time.Timer or *time.Ticker
// in it, reached through pointers, slices, arrays, map values, channels
// and named types of this package (a shape chain): a map of timers and its
// elements are then the same slot, since rewriting the one type expression
// changes both.
type slot struct {
	parent  int
	label   string // how a message names the slot: "conn.idle", "t"; "" for an expression
	rank    int    // the order of labels in a message: fields and types, results, parameters, locals
	sources []source
	occs    []occurrence
	poison  []reason
	cReads  []token.Pos // reads of the field C of a *time.Timer
	refs    int         // constructors used as function values
	decls   []types.Object
}

// A source is a call of time.AfterFunc, NewTimer or NewTicker.
type source struct {
	call *ast.CallExpr
	fun  ast.Expr // time.NewTimer, or NewTimer where time is dot-imported
	kind kind
}

// An occurrence is a time.Timer or time.Ticker in a type expression.
type occurrence struct {
	expr   ast.Expr
	ticker bool
}

// A reason is why a component keeps its types.
type reason struct {
	pos token.Pos
	why string
}

// shape says how a type holds a timer.
type shape struct {
	kind   shapeKind
	ticker bool            // the chain ends in a *time.Ticker
	named  *types.TypeName // chain: the named type of this package the chain goes through, if any
	inner  *types.TypeName // for a named type's own shape: the named type its underlying type goes through
	why    string          // opaque: why the type cannot be rewritten
}

type shapeKind int

const (
	noTimer shapeKind = iota // no timer, or only in fields of structs, which are slots of their own
	chain                    // one *time.Timer or *time.Ticker, reached through elements
	opaque                   // a timer the migration cannot rewrite here: a value, a func type, a map key
)

// funcInfo is a function or method declared in the package, a function
// literal, or a method of an interface of the package: the owner of the
// parameters and results that are slots.
type funcInfo struct {
	name string
	sig  *types.Signature
	decl types.Object // the *types.Func, for the names that files left out by build constraints mention
	why  reason       // if set, its parameters and results keep their types
}

type migrator struct {
	pass   *analysis.Pass
	info   *types.Info
	closed bool // no other package can name the package's objects: a main or external test package

	slots []slot
	vars  map[*types.Var]int        // -1: no timer in it
	types map[*types.TypeName]int   // slots of named types
	exprs map[ast.Expr]int          // slots of expressions
	named map[*types.TypeName]shape // shapes of named types of the package, as they are computed

	funcs        map[*types.Func]*funcInfo
	lits         map[*ast.FuncLit]*funcInfo
	owner        map[*types.Var]*funcInfo
	fieldOwner   map[*types.Var]string
	ifaceMethods map[string]string // names of methods of the package's interfaces that have timers in their signatures, to their interface
	ignored      map[string]string // identifiers that files left out by build constraints mention, to the file
	generated    map[*token.File]bool
	files        map[*token.File]*ast.File

	renames    []rename
	fileStates map[*token.File]*fileState
}

// A rename is a reference to a function that timingwheel repeats.
type rename struct {
	ref       ast.Expr
	pkg, name string
}

func newMigrator(pass *analysis.Pass) *migrator {
	m := &migrator{
		pass:         pass,
		info:         pass.TypesInfo,
		closed:       pass.Pkg.Name() == "main" && !dirHasExternalTests(pass) || strings.HasSuffix(pass.Pkg.Path(), "_test"),
		vars:         make(map[*types.Var]int),
		types:        make(map[*types.TypeName]int),
		exprs:        make(map[ast.Expr]int),
		named:        make(map[*types.TypeName]shape),
		funcs:        make(map[*types.Func]*funcInfo),
		lits:         make(map[*ast.FuncLit]*funcInfo),
		owner:        make(map[*types.Var]*funcInfo),
		fieldOwner:   make(map[*types.Var]string),
		ifaceMethods: make(map[string]string),
		ignored:      ignoredNames(pass),
		generated:    make(map[*token.File]bool),
		files:        make(map[*token.File]*ast.File),
	}
	for _, f := range pass.Files {
		tf := pass.Fset.File(f.Pos())
		m.files[tf] = f
		m.generated[tf] = ast.IsGenerated(f)
	}
	return m
}

func (m *migrator) newSlot(label string) int {
	m.slots = append(m.slots, slot{parent: len(m.slots), label: label})
	return len(m.slots) - 1
}

func (m *migrator) find(i int) int {
	for m.slots[i].parent != i {
		m.slots[i].parent = m.slots[m.slots[i].parent].parent
		i = m.slots[i].parent
	}
	return i
}

func (m *migrator) union(a, b int) {
	if a < 0 || b < 0 {
		return
	}
	a, b = m.find(a), m.find(b)
	if a != b {
		m.slots[b].parent = a
	}
}

func (m *migrator) poison(i int, pos token.Pos, format string, args ...any) {
	if i >= 0 {
		m.slots[i].poison = append(m.slots[i].poison, reason{pos, fmt.Sprintf(format, args...)})
	}
}

// isTimeType reports whether obj is time.Timer or time.Ticker.
func isTimeType(obj *types.TypeName) bool {
	return obj.Pkg() != nil && obj.Pkg().Path() == "time" && (obj.Name() == "Timer" || obj.Name() == "Ticker")
}

// shapeOf says how a value of type t holds a timer.
func (m *migrator) shapeOf(t types.Type) shape {
	switch t := t.(type) {
	case *types.Alias:
		obj := t.Obj()
		if obj.Pkg() == m.pass.Pkg && t.TypeArgs().Len() == 0 {
			return m.namedShape(obj, func() shape { return m.shapeOf(t.Rhs()) })
		}
		if s := m.shapeOf(types.Unalias(t)); s.kind != noTimer {
			return shape{kind: opaque, why: fmt.Sprintf("its type %s is declared in package %s", obj.Name(), pathOf(obj))}
		}
		return shape{}
	case *types.Named:
		obj := t.Obj()
		if isTimeType(obj) {
			return shape{kind: opaque, why: "a time." + obj.Name() + " held by value, not through a pointer"}
		}
		if t.TypeArgs().Len() > 0 {
			for a := range t.TypeArgs().Types() {
				if m.shapeOf(a).kind != noTimer {
					return shape{kind: opaque, why: "a type argument of " + obj.Name()}
				}
			}
			return shape{}
		}
		if obj.Pkg() == m.pass.Pkg {
			return m.namedShape(obj, func() shape { return m.shapeOf(t.Underlying()) })
		}
		if _, ok := t.Underlying().(*types.Struct); ok {
			return shape{} // its fields are slots of their own
		}
		if s := m.shapeOf(t.Underlying()); s.kind != noTimer {
			return shape{kind: opaque, why: fmt.Sprintf("its type %s is declared in package %s", obj.Name(), pathOf(obj))}
		}
		return shape{}
	case *types.Pointer:
		if n, ok := types.Unalias(t.Elem()).(*types.Named); ok && isTimeType(n.Obj()) {
			return shape{kind: chain, ticker: n.Obj().Name() == "Ticker"}
		}
		return m.shapeOf(t.Elem())
	case *types.Slice:
		return m.shapeOf(t.Elem())
	case *types.Array:
		return m.shapeOf(t.Elem())
	case *types.Chan:
		return m.shapeOf(t.Elem())
	case *types.Map:
		if m.shapeOf(t.Key()).kind != noTimer {
			return shape{kind: opaque, why: "a timer as a map key"}
		}
		return m.shapeOf(t.Elem())
	case *types.Signature:
		if m.sigHasTimer(t) {
			return shape{kind: opaque, why: "a timer in a function type"}
		}
		return shape{}
	}
	return shape{} // basic types, structs (their fields are slots), interfaces, type parameters
}

func pathOf(obj types.Object) string {
	if obj.Pkg() == nil {
		return "builtin"
	}
	return obj.Pkg().Path()
}

// namedShape is the shape of a named type or alias of the package.
func (m *migrator) namedShape(obj *types.TypeName, under func() shape) shape {
	if s, ok := m.named[obj]; ok {
		return s
	}
	m.named[obj] = shape{} // a type that holds itself holds no timer of its own
	s := under()
	if s.kind == chain {
		s.inner, s.named = s.named, obj
	}
	m.named[obj] = s
	return s
}

func (m *migrator) sigHasTimer(sig *types.Signature) bool {
	for _, tup := range []*types.Tuple{sig.Params(), sig.Results()} {
		for v := range tup.Variables() {
			if m.shapeOf(v.Type()).kind != noTimer {
				return true
			}
		}
	}
	return false
}

// typeSlot is the slot of a named type or alias of the package whose type
// has a timer: every variable of the type shares it.
func (m *migrator) typeSlot(obj *types.TypeName) int {
	if i, ok := m.types[obj]; ok {
		return i
	}
	i := m.newSlot("type " + obj.Name())
	m.types[obj] = i
	m.slots[i].decls = append(m.slots[i].decls, obj)
	s := m.shapeOf(obj.Type())
	switch {
	case s.kind == opaque:
		m.poison(i, obj.Pos(), "type %s holds %s", obj.Name(), s.why)
	case obj.Exported() && !m.closed:
		m.poison(i, obj.Pos(), "exported type %s: other packages may use it, and twmigrate does not follow timers across packages", obj.Name())
	}
	if s.inner != nil {
		m.union(i, m.typeSlot(s.inner))
	}
	return i
}

// varSlot is the slot of a variable, field, parameter or result, or -1 if
// its type holds no timer. at is where the package's code reaches it,
// for a variable of another package.
func (m *migrator) varSlot(v *types.Var, at token.Pos) int {
	v = v.Origin()
	if i, ok := m.vars[v]; ok {
		return i
	}
	s := m.shapeOf(v.Type())
	if s.kind == noTimer {
		m.vars[v] = -1
		return -1
	}
	i := m.newSlot(m.varLabel(v))
	m.vars[v] = i
	switch {
	case v.IsField() || v.Parent() == m.pass.Pkg.Scope():
	case m.owner[v] != nil && m.isResult(v):
		m.slots[i].rank = 1
	case m.owner[v] != nil:
		m.slots[i].rank = 2
	default:
		m.slots[i].rank = 3
	}
	switch {
	case v.Pkg() != m.pass.Pkg:
		m.poison(i, at, "%s belongs to package %s, and twmigrate does not follow timers across packages", v.Name(), pathOf(v))
		return i
	case s.kind == opaque:
		m.poison(i, v.Pos(), "%s holds %s", m.slots[i].label, s.why)
	case v.Embedded():
		m.poison(i, v.Pos(), "embedded field %s: its name and its promoted methods would change", v.Name())
	case v.IsField() && v.Exported() && !m.closed:
		m.poison(i, v.Pos(), "exported field %s: other packages may use it, and twmigrate does not follow timers across packages", m.slots[i].label)
	case !v.IsField() && v.Parent() == m.pass.Pkg.Scope() && v.Exported() && !m.closed:
		m.poison(i, v.Pos(), "exported variable %s: other packages may use it, and twmigrate does not follow timers across packages", v.Name())
	}
	if v.IsField() || v.Parent() == m.pass.Pkg.Scope() {
		m.slots[i].decls = append(m.slots[i].decls, v)
	}
	if f := m.owner[v]; f != nil && f.decl != nil {
		m.slots[i].decls = append(m.slots[i].decls, f.decl)
	}
	if s.named != nil {
		m.union(i, m.typeSlot(s.named))
	}
	return i
}

func (m *migrator) varLabel(v *types.Var) string {
	if v.IsField() {
		if o := m.fieldOwner[v]; o != "" {
			return o + "." + v.Name()
		}
		return v.Name()
	}
	if f := m.owner[v]; f != nil {
		if m.isResult(v) {
			if v.Name() == "" || v.Name() == "_" {
				return "the result of " + f.name
			}
			return "result " + v.Name() + " of " + f.name
		}
		return "parameter " + v.Name() + " of " + f.name
	}
	return v.Name()
}

func (m *migrator) isResult(v *types.Var) bool {
	if f := m.owner[v]; f != nil {
		for r := range f.sig.Results().Variables() {
			if r == v {
				return true
			}
		}
	}
	return false
}

// exprSlot is the slot of an expression that makes a value: a conversion,
// a composite literal, a call of make, new or append, a constructor.
func (m *migrator) exprSlot(e ast.Expr) int {
	if i, ok := m.exprs[e]; ok {
		return i
	}
	i := m.newSlot("")
	m.exprs[e] = i
	return i
}

// chainSlot is varSlot for a variable of a chain type, else -1: a
// parameter of type any receives a timer, it is no slot of one.
func (m *migrator) chainSlot(v *types.Var, at token.Pos) int {
	if m.shapeOf(v.Type()).kind != chain {
		return -1
	}
	return m.varSlot(v, at)
}
