package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Variable is a variable block: an input set with -var NAME=VALUE.
type Variable struct {
	Name        string
	Type        cty.Type // cty.DynamicPseudoType when not constrained
	Default     cty.Value
	Description string
	Value       cty.Value // the value in force
	DeclRange   hcl.Range
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
}

// scope builds the evaluation context of a configuration: its variables
// (from -var values and defaults) and its locals, evaluated in dependency
// order. Only this context is visible to expressions: nothing is read from
// the environment or the disk.
func (d *decoder) scope(blocks []*hcl.Block, vars map[string]string) *hcl.EvalContext {
	ctx := evalContext().NewChild()
	ctx.Variables = map[string]cty.Value{}
	d.cfg.Variables = map[string]*Variable{}

	var localAttrs []*hcl.Attribute
	seenLocal := map[string]hcl.Range{}
	for _, blk := range blocks {
		switch blk.Type {
		case "variable":
			name := blk.Labels[0]
			if prev, dup := d.cfg.Variables[name]; dup {
				d.errorf(blk.DefRange, "Duplicate variable block", "Variable %q was already declared at %s.", name, prev.DeclRange)
				continue
			}
			d.cfg.Variables[name] = d.decodeVariable(blk)
		case "locals":
			attrs, ds := blk.Body.JustAttributes()
			d.add(ds)
			ordered := make([]*hcl.Attribute, 0, len(attrs))
			for _, a := range attrs {
				ordered = append(ordered, a)
			}
			sort.Slice(ordered, func(i, j int) bool { return ordered[i].Range.Start.Byte < ordered[j].Range.Start.Byte })
			for _, a := range ordered {
				if prev, dup := seenLocal[a.Name]; dup {
					d.errorf(a.NameRange, "Duplicate local value", "Local value %q was already defined at %s.", a.Name, prev)
					continue
				}
				seenLocal[a.Name] = a.NameRange
				localAttrs = append(localAttrs, a)
			}
		}
	}

	// -var values: each must name a variable.
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, ok := d.cfg.Variables[n]
		if !ok {
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("-var %s=... names no variable block.%s Declare it: variable %q {}.", n, suggest.DidYouMean(n, sortedKeys(d.cfg.Variables)), n)})
			continue
		}
		val, err := parseVarValue(vars[n], v.Type)
		if err != nil {
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail: fmt.Sprintf("-var %s=%s: %v.", n, vars[n], err), Subject: &v.DeclRange})
			continue
		}
		v.Value = val
	}
	varVals := map[string]cty.Value{}
	for _, n := range sortedKeys(d.cfg.Variables) {
		v := d.cfg.Variables[n]
		if v.Value == cty.NilVal {
			if v.Default == cty.NilVal {
				r := v.DeclRange
				d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable",
					Detail: fmt.Sprintf("Variable %q has no default: pass -var %s=VALUE, or give it a default.", n, n), Subject: &r})
				v.Value = cty.UnknownVal(v.Type)
			} else {
				v.Value = v.Default
			}
		}
		varVals[n] = v.Value
	}
	ctx.Variables["var"] = cty.ObjectVal(varVals)

	// Locals: evaluate whatever has its references resolved, until nothing
	// is left or nothing moves (a cycle).
	locals := map[string]cty.Value{}
	pending := localAttrs
	for len(pending) > 0 {
		var next []*hcl.Attribute
		for _, a := range pending {
			if !localsReady(a, locals, seenLocal) {
				next = append(next, a)
				continue
			}
			ctx.Variables["local"] = cty.ObjectVal(locals)
			v, ds := a.Expr.Value(ctx)
			d.add(ds)
			if ds.HasErrors() {
				v = cty.DynamicVal
			}
			locals[a.Name] = v
		}
		if len(next) == len(pending) {
			var names []string
			for _, a := range next {
				names = append(names, "local."+a.Name)
			}
			r := next[0].Expr.Range()
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cycle in local values",
				Detail: fmt.Sprintf("These local values refer to each other: %s.", strings.Join(names, ", ")), Subject: &r})
			for _, a := range next {
				locals[a.Name] = cty.DynamicVal
			}
			break
		}
		pending = next
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	return ctx
}

// localsReady reports whether every local value a refers to is evaluated.
func localsReady(a *hcl.Attribute, done map[string]cty.Value, declared map[string]hcl.Range) bool {
	for _, t := range a.Expr.Variables() {
		if t.RootName() != "local" || len(t) < 2 {
			continue
		}
		step, ok := t[1].(hcl.TraverseAttr)
		if !ok {
			continue
		}
		if _, isDeclared := declared[step.Name]; !isDeclared {
			continue // evaluation reports the unknown name
		}
		if _, ok := done[step.Name]; !ok {
			return false
		}
	}
	return true
}

func (d *decoder) decodeVariable(blk *hcl.Block) *Variable {
	v := &Variable{Name: blk.Labels[0], Type: cty.DynamicPseudoType, DeclRange: blk.DefRange}
	content, ds := blk.Body.Content(variableSchema)
	d.add(ds)
	if a, ok := content.Attributes["type"]; ok {
		ty, ds := typeexpr.TypeConstraint(a.Expr)
		d.add(ds)
		if !ds.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		val, ds := a.Expr.Value(nil)
		d.add(ds)
		if !ds.HasErrors() && val.Type() == cty.String && !val.IsNull() {
			v.Description = val.AsString()
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, ds := a.Expr.Value(evalContext())
		d.add(ds)
		// A default that is wrong is reported once; the variable then holds
		// an unknown value instead of also being "required".
		v.Default = cty.UnknownVal(v.Type)
		if !ds.HasErrors() {
			cv, err := convert.Convert(val, v.Type)
			if err != nil {
				d.errorf(a.Expr.Range(), "Invalid default value for variable", "The default of %q does not match its type: %v.", v.Name, err)
			} else {
				v.Default = cv
			}
		}
	}
	return v
}

// parseVarValue reads a -var value: a string variable takes it as it is;
// any other is parsed as an HCL expression (7, true, ["a", "b"]).
func parseVarValue(raw string, ty cty.Type) (cty.Value, error) {
	if ty == cty.String || ty == cty.DynamicPseudoType {
		if ty == cty.String || !looksLikeExpr(raw) {
			return cty.StringVal(raw), nil
		}
	}
	bad := func(why string) error {
		return fmt.Errorf("%q is not a %s value (%s); write it as HCL, such as 8, true, [0, 1] or {a = \"b\"}, quoted for the shell", raw, typeexpr.TypeString(ty), why)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "<value for -var>", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, bad(diags[0].Summary)
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, bad(diags[0].Summary)
	}
	out, err := convert.Convert(val, ty)
	if err != nil {
		return cty.NilVal, bad(err.Error())
	}
	return out, nil
}

func looksLikeExpr(s string) bool {
	s = strings.TrimSpace(s)
	if s == "true" || s == "false" || strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
		return true
	}
	_, err := fmt.Sscanf(s, "%g", new(float64))
	return err == nil
}
