package main

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"
)

// prepare records the owners of fields, parameters and results, and the
// functions whose parameters and results keep their types whatever flows
// into them: exported ones (other packages call them), methods that may
// implement an interface, methods of interfaces, functions without a body.
func (m *migrator) prepare() {
	for _, f := range m.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if st, ok := m.info.TypeOf(n.Type).(*types.Struct); ok {
					for v := range st.Fields() {
						m.fieldOwner[v] = n.Name.Name
					}
				}
			case *ast.InterfaceType:
				iface, ok := m.info.TypeOf(n).(*types.Interface)
				if !ok {
					break
				}
				for i := range iface.NumExplicitMethods() {
					fn := iface.ExplicitMethod(i)
					sig := fn.Signature()
					fi := &funcInfo{name: "interface method " + fn.Name(), sig: sig}
					m.own(fi)
					if m.sigHasTimer(sig) {
						fi.why = reason{fn.Pos(), fmt.Sprintf("in the signature of interface method %s, whose implementations and callers are out of sight", fn.Name())}
						m.ifaceMethods[fn.Name()] = fn.Name()
					}
				}
			case *ast.FuncLit:
				if sig, ok := m.info.TypeOf(n).(*types.Signature); ok {
					fi := &funcInfo{name: "a function literal", sig: sig}
					m.lits[n] = fi
					m.own(fi)
				}
			}
			return true
		})
	}
	linked := linknamed(m.pass.Files)
	for _, f := range m.pass.Files {
		for _, d := range f.Decls {
			d, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			fn, ok := m.info.Defs[d.Name].(*types.Func)
			if !ok {
				continue
			}
			sig := fn.Signature()
			fi := &funcInfo{name: fn.Name(), sig: sig, decl: fn}
			if recv := sig.Recv(); recv != nil {
				if n, ok := types.Unalias(derefType(recv.Type())).(*types.Named); ok {
					fi.name = n.Obj().Name() + "." + fn.Name()
				}
			}
			m.funcs[fn] = fi
			m.own(fi)
			if !m.sigHasTimer(sig) {
				continue
			}
			switch {
			case d.Body == nil:
				fi.why = reason{d.Name.Pos(), fmt.Sprintf("%s has no body in Go", fi.name)}
			case sig.Recv() == nil && linked[d.Name.Name]:
				fi.why = reason{d.Name.Pos(), fmt.Sprintf("%s is named in a go:linkname directive: code out of sight may call it with the time package's types", fi.name)}
			case sig.Recv() != nil && fn.Exported():
				fi.why = reason{d.Name.Pos(), fmt.Sprintf("exported method %s may implement an interface, or be called from another package", fi.name)}
			case sig.Recv() != nil && m.ifaceMethods[fn.Name()] != "":
				fi.why = reason{d.Name.Pos(), fmt.Sprintf("method %s may implement interface method %s", fi.name, fn.Name())}
			case sig.Recv() == nil && fn.Exported() && !m.closed:
				fi.why = reason{d.Name.Pos(), fmt.Sprintf("exported function %s: other packages may call it, and twmigrate does not follow timers across packages", fi.name)}
			}
		}
	}
}

func (m *migrator) own(fi *funcInfo) {
	for _, tup := range []*types.Tuple{fi.sig.Params(), fi.sig.Results()} {
		for v := range tup.Variables() {
			m.owner[v] = fi
		}
	}
}

func derefType(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// finish keeps the types of the parameters and results of the functions
// found out of bounds.
func (m *migrator) finish() {
	// In the order of the source, so that slots are made in the same order
	// on every run.
	var vars []*types.Var
	for v, fi := range m.owner {
		if fi.why.why != "" {
			vars = append(vars, v)
		}
	}
	slices.SortFunc(vars, func(a, b *types.Var) int { return cmp.Compare(a.Pos(), b.Pos()) })
	for _, v := range vars {
		fi := m.owner[v]
		if m.shapeOf(v.Type()).kind != noTimer {
			m.poison(m.varSlot(v, fi.why.pos), fi.why.pos, "%s", fi.why.why)
		}
	}
}

// attribute joins an occurrence of time.Timer or time.Ticker (stack[at])
// to the slot whose type expression holds it.
func (m *migrator) attribute(o occurrence, stack []ast.Node, at int) {
	add := func(i int) {
		m.slots[i].occs = append(m.slots[i].occs, o)
	}
	stray := func(why string) {
		i := m.newSlot("")
		add(i)
		m.poison(i, o.expr.Pos(), "%s", why)
	}
	child := stack[at]
	for i := at - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.StarExpr, *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.ParenExpr, *ast.Ellipsis,
			*ast.IndexExpr, *ast.IndexListExpr, *ast.FieldList, *ast.FuncType:
			// still inside the type expression
		case *ast.Field:
			vars, ok := m.fieldVars(p, stack, i)
			if !ok {
				break // a parameter of a func type inside a bigger type: the bigger type's owner holds it
			}
			if len(vars) == 0 {
				stray("a type parameter's constraint, which twmigrate does not rewrite")
				return
			}
			first := m.varSlot(vars[0], o.expr.Pos())
			if first < 0 {
				stray("a type twmigrate does not follow")
				return
			}
			add(first)
			for _, v := range vars[1:] {
				m.union(first, m.varSlot(v, o.expr.Pos()))
			}
			return
		case *ast.ValueSpec:
			if child != p.Type {
				stray("an expression twmigrate does not follow")
				return
			}
			first := -1
			for _, id := range p.Names {
				if v, ok := m.info.Defs[id].(*types.Var); ok {
					j := m.varSlot(v, id.Pos())
					if first < 0 {
						first = j
					}
					m.union(first, j)
				}
			}
			if first < 0 {
				first = m.newSlot("")
			}
			add(first)
			return
		case *ast.TypeSpec:
			tn, ok := m.info.Defs[p.Name].(*types.TypeName)
			if child != p.Type || !ok {
				stray("a type parameter's constraint, which twmigrate does not rewrite")
				return
			}
			add(m.typeSlot(tn))
			return
		case *ast.CompositeLit:
			if child != p.Type {
				stray("an expression twmigrate does not follow")
				return
			}
			add(m.exprSlot(p))
			return
		case *ast.TypeAssertExpr:
			j := m.exprSlot(p)
			add(j)
			m.poison(j, p.Pos(), "taken out of an interface by a type assertion")
			return
		case *ast.CallExpr:
			if child == p.Fun && m.info.Types[p.Fun].IsType() {
				add(m.exprSlot(p)) // a conversion
				return
			}
			if b := builtinName(m.info, p.Fun); (b == "make" || b == "new") && len(p.Args) > 0 && child == p.Args[0] {
				add(m.exprSlot(p))
				return
			}
			stray("a type argument, which twmigrate does not rewrite")
			return
		case *ast.CaseClause:
			stray("a type switch case: the value comes out of an interface")
			return
		case *ast.SelectorExpr:
			stray("a method expression, whose type would change")
			return
		default:
			stray("a use of the type twmigrate does not follow")
			return
		}
		child = stack[i]
	}
}

// fieldVars returns the variables that a field declares (stack[at]): a
// struct's fields, a function's parameters or results. ok is false for a
// parameter of a function type that is part of another type expression.
func (m *migrator) fieldVars(field *ast.Field, stack []ast.Node, at int) (vars []*types.Var, ok bool) {
	if at < 2 {
		return nil, true
	}
	list := stack[at-1].(*ast.FieldList)
	// index of the field's first variable in the list
	idx := 0
	for _, f := range list.List {
		if f == field {
			break
		}
		idx += max(1, len(f.Names))
	}
	n := max(1, len(field.Names))
	switch o := stack[at-2].(type) {
	case *ast.StructType:
		st, ok := m.info.TypeOf(o).(*types.Struct)
		if !ok || idx+n > st.NumFields() {
			return nil, true
		}
		for j := range n {
			vars = append(vars, st.Field(idx+j))
		}
		return vars, true
	case *ast.FuncType:
		sig := m.sigOfFuncType(o, stack, at-2)
		if sig == nil {
			return nil, false
		}
		var tup *types.Tuple
		switch list {
		case o.Params:
			tup = sig.Params()
		case o.Results:
			tup = sig.Results()
		default:
			return nil, true // type parameters
		}
		if idx+n > tup.Len() {
			return nil, true
		}
		for j := range n {
			vars = append(vars, tup.At(idx+j))
		}
		return vars, true
	}
	return nil, true
}

// sigOfFuncType returns the signature of a function or method declared in
// the package, a function literal, or a method of an interface, whose type
// is stack[at]; nil if stack[at] is a func type inside another type.
func (m *migrator) sigOfFuncType(ft *ast.FuncType, stack []ast.Node, at int) *types.Signature {
	if at == 0 {
		return nil
	}
	switch p := stack[at-1].(type) {
	case *ast.FuncDecl:
		if fn, ok := m.info.Defs[p.Name].(*types.Func); ok && p.Type == ft {
			return fn.Signature()
		}
	case *ast.FuncLit:
		sig, _ := m.info.TypeOf(p).(*types.Signature)
		return sig
	case *ast.Field:
		if at >= 3 && len(p.Names) == 1 {
			if _, ok := stack[at-3].(*ast.InterfaceType); ok {
				if fn, ok := m.info.Defs[p.Names[0]].(*types.Func); ok {
					return fn.Signature()
				}
			}
		}
	}
	return nil
}

func builtinName(info *types.Info, fun ast.Expr) string {
	if id, ok := ast.Unparen(fun).(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok {
			return b.Name()
		}
	}
	return ""
}

// linknamed returns the local names that the files' go:linkname directives
// name: a function linked to or from another package is called there with
// the types it had, which no type check relates to its new ones.
func linknamed(files []*ast.File) map[string]bool {
	names := make(map[string]bool)
	for _, f := range files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				if fields := strings.Fields(c.Text); len(fields) >= 2 && fields[0] == "//go:linkname" {
					names[fields[1]] = true
				}
			}
		}
	}
	return names
}
