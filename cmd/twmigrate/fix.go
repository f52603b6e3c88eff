package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// A component is the union of slots joined by flows: its timers change
// type together, or none does.
type component struct {
	labels  []labelAt
	sources []source
	occs    []occurrence
	poison  []reason
	cReads  []token.Pos
	refs    int
	decls   []types.Object
}

type labelAt struct {
	label string
	rank  int
	pos   token.Pos
}

func (c *component) anchor() token.Pos {
	switch {
	case len(c.sources) > 0:
		return c.sources[0].call.Pos()
	case len(c.occs) > 0:
		return c.occs[0].expr.Pos()
	case len(c.poison) > 0:
		return c.poison[0].pos
	}
	return token.NoPos
}

func (c *component) ticker() bool {
	for _, o := range c.occs {
		if o.ticker {
			return true
		}
	}
	for _, s := range c.sources {
		if s.kind == kindNewTicker {
			return true
		}
	}
	return false
}

func (m *migrator) components() []*component {
	byRoot := make(map[int]*component)
	var list []*component
	for i := range m.slots {
		r := m.find(i)
		c := byRoot[r]
		if c == nil {
			c = new(component)
			byRoot[r] = c
			list = append(list, c)
		}
		s := &m.slots[i]
		if s.label != "" {
			pos := token.NoPos
			if len(s.decls) > 0 {
				pos = s.decls[0].Pos()
			}
			c.labels = append(c.labels, labelAt{s.label, s.rank, pos})
		}
		c.sources = append(c.sources, s.sources...)
		c.occs = append(c.occs, s.occs...)
		c.poison = append(c.poison, s.poison...)
		c.cReads = append(c.cReads, s.cReads...)
		c.refs += s.refs
		c.decls = append(c.decls, s.decls...)
	}
	// Slots are made in an order that depends on map iteration: sort all
	// that a message or an edit depends on by position.
	for _, c := range list {
		slices.SortStableFunc(c.labels, m.cmpLabel)
		seen := make(map[string]bool)
		c.labels = slices.DeleteFunc(c.labels, func(l labelAt) bool {
			dup := seen[l.label]
			seen[l.label] = true
			return dup
		})
		slices.SortFunc(c.sources, func(a, b source) int { return m.cmpPos(a.call.Pos(), b.call.Pos()) })
		slices.SortFunc(c.occs, func(a, b occurrence) int { return m.cmpPos(a.expr.Pos(), b.expr.Pos()) })
		c.occs = slices.CompactFunc(c.occs, func(a, b occurrence) bool { return a.expr == b.expr })
		slices.SortStableFunc(c.poison, func(a, b reason) int {
			if c := m.cmpPos(a.pos, b.pos); c != 0 {
				return c
			}
			return strings.Compare(a.why, b.why)
		})
		slices.SortFunc(c.cReads, m.cmpPos)
		slices.SortFunc(c.decls, func(a, b types.Object) int { return m.cmpPos(a.Pos(), b.Pos()) })
	}
	slices.SortStableFunc(list, func(a, b *component) int { return m.cmpPos(a.anchor(), b.anchor()) })
	return list
}

func (m *migrator) cmpLabel(a, b labelAt) int {
	if a.rank != b.rank {
		return a.rank - b.rank
	}
	if c := m.cmpPos(a.pos, b.pos); c != 0 {
		return c
	}
	return strings.Compare(a.label, b.label)
}

// cmpPos orders positions by file name, then offset: the order of files
// in the file set depends on the order the driver parsed them in.
func (m *migrator) cmpPos(a, b token.Pos) int {
	pa, pb := m.pass.Fset.Position(a), m.pass.Fset.Position(b)
	if c := strings.Compare(pa.Filename, pb.Filename); c != 0 {
		return c
	}
	return pa.Offset - pb.Offset
}

// An edit replaces an expression that names something of the time or
// context package with what timingwheel calls it.
type edit struct {
	expr ast.Expr
	name string // after the qualifier
}

// A plan is one diagnostic and the edits of its fix.
type plan struct {
	pos     token.Pos
	message string
	edits   []edit
}

// fileState is what the edits of a file have in common: the name
// timingwheel is known by there, and the imports they leave unused.
type fileState struct {
	f       *ast.File
	tf      *token.File
	qual    string
	has     bool   // the file imports timingwheel already
	bad     string // why nothing in the file is rewritten
	uses    map[*types.PkgName]int
	removed map[*types.PkgName]int
	imports []analysis.TextEdit
	done    bool
}

func (m *migrator) fileOf(pos token.Pos) *fileState {
	tf := m.pass.Fset.File(pos)
	if m.fileStates == nil {
		m.fileStates = make(map[*token.File]*fileState)
	}
	if fs, ok := m.fileStates[tf]; ok {
		return fs
	}
	fs := &fileState{f: m.files[tf], tf: tf, qual: "timingwheel", uses: make(map[*types.PkgName]int), removed: make(map[*types.PkgName]int)}
	m.fileStates[tf] = fs
	if fs.f == nil {
		fs.bad = "not a file of the package"
		return fs
	}
	if m.generated[tf] {
		fs.bad = "in a generated file"
	}
	for _, spec := range fs.f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := ""
		if spec.Name != nil {
			name = spec.Name.Name
		}
		switch {
		case path == wheelPath && name == ".":
			fs.bad = "the file dot-imports timingwheel"
		case path == wheelPath && name != "_":
			fs.has = true
			if name != "" {
				fs.qual = name
			}
		case (path == "time" || path == "context") && name == ".":
			fs.bad = "the file dot-imports " + path
		}
	}
	ast.Inspect(fs.f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if pn, ok := m.info.Uses[id].(*types.PkgName); ok {
				fs.uses[pn]++
			}
		}
		return true
	})
	return fs
}

// check says why an edit at e cannot be made, or "".
func (m *migrator) check(e ast.Expr) string {
	fs := m.fileOf(e.Pos())
	if fs.bad != "" {
		return fs.bad
	}
	scope := m.pass.Pkg.Scope().Innermost(e.Pos())
	if scope == nil {
		return ""
	}
	if _, obj := scope.LookupParent(fs.qual, e.Pos()); obj != nil {
		if pn, ok := obj.(*types.PkgName); !ok || pn.Imported().Path() != wheelPath {
			return fmt.Sprintf("the name %s means %s here", fs.qual, m.typeStringObj(obj))
		}
	}
	return ""
}

func (m *migrator) typeStringObj(obj types.Object) string {
	return types.ObjectString(obj, types.RelativeTo(m.pass.Pkg))
}

func (m *migrator) where(pos token.Pos) string {
	p := m.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// plan decides a component: the plan of its rewrite, or the reason it
// keeps its types; neither if nothing in it is made by a constructor.
func (m *migrator) plan(c *component) (*plan, *reason) {
	if len(c.poison) > 0 {
		return nil, &c.poison[0]
	}
	if len(c.sources) == 0 {
		return nil, nil
	}
	k := c.sources[0].kind
	for _, s := range c.sources[1:] {
		if s.kind != k {
			return nil, &reason{s.call.Pos(), fmt.Sprintf("it is given both time.%s (%s) and time.%s (%s) results, and no one timingwheel type holds both",
				kindFunc[k], m.where(c.sources[0].call.Pos()), kindFunc[s.kind], m.where(s.call.Pos()))}
		}
	}
	if k == kindAfterFunc && len(c.cReads) > 0 {
		return nil, &reason{c.cReads[0], "it reads C of a time.AfterFunc timer, which is nil there; timingwheel.Timer has no C"}
	}
	for _, d := range c.decls {
		if file, ok := m.ignored[d.Name()]; ok {
			return nil, &reason{d.Pos(), fmt.Sprintf("%s is named in %s, which build constraints leave out here and twmigrate cannot check", d.Name(), file)}
		}
	}
	p := &plan{pos: c.sources[0].call.Pos()}
	for _, o := range c.occs {
		p.edits = append(p.edits, edit{o.expr, kindType[k]})
	}
	for _, s := range c.sources {
		p.edits = append(p.edits, edit{s.fun, kindFunc[k]})
	}
	for _, e := range p.edits {
		if why := m.check(e.expr); why != "" {
			return nil, &reason{e.expr.Pos(), why}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "time.%s", kindFunc[k])
	if n := len(c.sources); n > 1 {
		fmt.Fprintf(&b, " (%d calls)", n)
	}
	fmt.Fprintf(&b, " becomes timingwheel.%s", kindFunc[k])
	if len(c.labels) > 0 {
		verb := "holds"
		if len(c.labels) > 1 {
			verb = "hold"
		}
		fmt.Fprintf(&b, ": %s %s a *timingwheel.%s", labelList(c.labels), verb, kindType[k])
	} else if len(c.occs) > 0 {
		fmt.Fprintf(&b, ", and *time.%s becomes *timingwheel.%s", leafName(c), kindType[k])
	}
	p.message = b.String()
	return p, nil
}

func leafName(c *component) string {
	if c.ticker() {
		return "Ticker"
	}
	return "Timer"
}

func labelList(ls []labelAt) string {
	const most = 4
	var names []string
	for i, l := range ls {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(ls)-most))
			break
		}
		names = append(names, l.label)
	}
	return strings.Join(names, ", ")
}

func (m *migrator) refusal(c *component, r *reason) analysis.Diagnostic {
	var msg string
	switch {
	case len(c.labels) > 0:
		msg = fmt.Sprintf("%s: not migrated, stays *time.%s: %s", labelList(c.labels), leafName(c), r.why)
	case len(c.sources) > 0:
		msg = fmt.Sprintf("the timer of time.%s: not migrated, stays *time.%s: %s", kindFunc[c.sources[0].kind], leafName(c), r.why)
	case len(c.occs) > 0:
		msg = fmt.Sprintf("*time.%s not migrated: %s", leafName(c), r.why)
	default:
		msg = "not migrated: " + r.why
	}
	return analysis.Diagnostic{Pos: r.pos, Message: msg}
}

// report decides every component and rename, and reports each with its
// fix, or with the reason it keeps the time package.
func (m *migrator) report() {
	var diags []analysis.Diagnostic
	var plans []*plan
	for _, c := range m.components() {
		if len(c.sources) == 0 && len(c.occs) == 0 && c.refs == 0 {
			continue
		}
		p, r := m.plan(c)
		switch {
		case r != nil:
			diags = append(diags, m.refusal(c, r))
		case p != nil:
			plans = append(plans, p)
		}
	}
	for _, rn := range m.renames {
		e := edit{rn.ref, rn.name}
		if why := m.check(rn.ref); why != "" {
			diags = append(diags, analysis.Diagnostic{Pos: rn.ref.Pos(), Message: fmt.Sprintf("%s.%s: not migrated: %s", rn.pkg, rn.name, why)})
			continue
		}
		plans = append(plans, &plan{pos: rn.ref.Pos(), message: fmt.Sprintf("%s.%s becomes timingwheel.%s", rn.pkg, rn.name, rn.name), edits: []edit{e}})
	}
	// Every edit is decided: count the qualifiers they replace, so that an
	// import whose every use goes is deleted.
	for _, p := range plans {
		for _, e := range p.edits {
			if pn := m.qualifier(e.expr); pn != nil {
				m.fileOf(e.expr.Pos()).removed[pn]++
			}
		}
	}
	for _, p := range plans {
		var text []analysis.TextEdit
		touched := make(map[*fileState]bool)
		for _, e := range p.edits {
			fs := m.fileOf(e.expr.Pos())
			touched[fs] = true
			text = append(text, analysis.TextEdit{Pos: e.expr.Pos(), End: e.expr.End(), NewText: []byte(fs.qual + "." + e.name)})
		}
		for fs := range touched {
			text = append(text, m.importEdits(fs)...)
		}
		slices.SortFunc(text, func(a, b analysis.TextEdit) int {
			if c := m.cmpPos(a.Pos, b.Pos); c != 0 {
				return c
			}
			return m.cmpPos(a.End, b.End)
		})
		text = slices.CompactFunc(text, func(a, b analysis.TextEdit) bool {
			return a.Pos == b.Pos && a.End == b.End && string(a.NewText) == string(b.NewText)
		})
		diags = append(diags, analysis.Diagnostic{
			Pos:     p.pos,
			Message: p.message,
			SuggestedFixes: []analysis.SuggestedFix{{
				Message:   "Move to timingwheel",
				TextEdits: text,
			}},
		})
	}
	slices.SortStableFunc(diags, func(a, b analysis.Diagnostic) int {
		if c := m.cmpPos(a.Pos, b.Pos); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	for _, d := range diags {
		m.pass.Report(d)
	}
}

// qualifier returns the package name that e, time.X or context.X, is
// qualified with.
func (m *migrator) qualifier(e ast.Expr) *types.PkgName {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		if id, ok := sel.X.(*ast.Ident); ok {
			pn, _ := m.info.Uses[id].(*types.PkgName)
			return pn
		}
	}
	return nil
}

// importEdits adds the import of timingwheel to a file that has none, and
// deletes the imports of time and context whose every use the plans
// replace. Every fix that edits the file carries the same edits, which
// the drivers merge into one.
func (m *migrator) importEdits(fs *fileState) []analysis.TextEdit {
	if fs.done {
		return fs.imports
	}
	fs.done = true
	del := make(map[*ast.ImportSpec]bool)
	for _, spec := range fs.f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		if path != "time" && path != "context" || spec.Name != nil && (spec.Name.Name == "_" || spec.Name.Name == ".") {
			continue
		}
		if pn := m.info.PkgNameOf(spec); pn != nil && fs.removed[pn] > 0 && fs.removed[pn] == fs.uses[pn] {
			del[spec] = true
		}
	}
	var decls []*ast.GenDecl
	for _, d := range fs.f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			if len(g.Specs) == 1 && g.Specs[0].(*ast.ImportSpec).Path.Value == `"C"` {
				continue // cgo's import stays alone
			}
			decls = append(decls, g)
		}
	}
	var target *ast.GenDecl
	if !fs.has && len(decls) > 0 {
		target = decls[len(decls)-1]
	}
	quoted := strconv.Quote(wheelPath)
	var out []analysis.TextEdit
	for _, d := range decls {
		var kept []*ast.ImportSpec
		for _, s := range d.Specs {
			if !del[s.(*ast.ImportSpec)] {
				kept = append(kept, s.(*ast.ImportSpec))
			}
		}
		if !d.Lparen.IsValid() {
			spec := d.Specs[0].(*ast.ImportSpec)
			switch {
			case d == target && del[spec]:
				out = append(out, analysis.TextEdit{Pos: d.Pos(), End: d.End(), NewText: []byte("import " + quoted)})
			case d == target:
				out = append(out, analysis.TextEdit{Pos: d.Pos(), End: d.End(), NewText: []byte("import (\n\t" + m.src(spec) + "\n\n\t" + quoted + "\n)")})
			case del[spec]:
				out = append(out, analysis.TextEdit{Pos: d.Pos(), End: d.End()})
			}
			continue
		}
		if len(kept) == 0 && d != target {
			out = append(out, analysis.TextEdit{Pos: d.Pos(), End: d.End()})
			continue
		}
		for _, s := range d.Specs {
			if del[s.(*ast.ImportSpec)] {
				out = append(out, m.deleteLine(fs, d, s))
			}
		}
		if d == target {
			text := "\t" + quoted + "\n"
			if len(kept) == 0 || isStd(kept[len(kept)-1]) {
				text = "\n" + text // a group of its own, after the standard library's
			}
			out = append(out, analysis.TextEdit{Pos: d.Rparen, End: d.Rparen, NewText: []byte(text)})
		}
	}
	if target == nil && !fs.has {
		// No import declaration at all: cannot be, since every edit replaces a
		// name of time or context; but keep the file valid if it were so.
		out = append(out, analysis.TextEdit{Pos: fs.f.Name.End(), End: fs.f.Name.End(), NewText: []byte("\n\nimport " + quoted)})
	}
	fs.imports = out
	return out
}

// deleteLine deletes an import spec with its line, when it has the line
// to itself.
func (m *migrator) deleteLine(fs *fileState, d *ast.GenDecl, s ast.Spec) analysis.TextEdit {
	line := fs.tf.Line(s.Pos())
	for _, o := range d.Specs {
		if o != s && (fs.tf.Line(o.Pos()) == line || fs.tf.Line(o.End()) == line) {
			return analysis.TextEdit{Pos: s.Pos(), End: s.End()}
		}
	}
	start := fs.tf.LineStart(line)
	end := s.End()
	if next := fs.tf.Line(s.End()) + 1; next <= fs.tf.LineCount() {
		end = fs.tf.LineStart(next)
	}
	if end > d.Rparen {
		end = d.Rparen
	}
	return analysis.TextEdit{Pos: start, End: end}
}

func (m *migrator) src(spec *ast.ImportSpec) string {
	if spec.Name != nil {
		return spec.Name.Name + " " + spec.Path.Value
	}
	return spec.Path.Value
}

// isStd reports whether an import is of the standard library: no dot in
// the path's first element.
func isStd(spec *ast.ImportSpec) bool {
	path, _ := strconv.Unquote(spec.Path.Value)
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
