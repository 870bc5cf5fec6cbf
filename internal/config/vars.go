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

// Variable is a variable block: an input of the configuration.
type Variable struct {
	Name        string
	Type        cty.Type // cty.DynamicPseudoType when not constrained
	Default     cty.Value
	Description string
	// Sensitive values are marked (cty mark "sensitive") wherever they flow;
	// the blocks they reach record it in their Sensitive sets.
	Sensitive bool
	// Nullable (the default) lets a null value through; false turns a null
	// into the default, or an error without one.
	Nullable    bool
	Validations []*Validation
	Value       cty.Value // the value in force (marked when Sensitive)
	// ValueFrom says where Value came from: "default", "-var",
	// "ROOFLINE_VAR_name" or a file name; "" when unknown (validate).
	ValueFrom string
	DeclRange hcl.Range

	valueRange   *hcl.Range // where Value was written, when in a file
	defaultRange *hcl.Range
}

// Validation is a variable's validation block.
type Validation struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression
	DeclRange    hcl.Range
}

// SensitiveMark is the cty mark carried by values of sensitive variables.
const SensitiveMark = "sensitive"

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"}, {Name: "nullable"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

// scope builds the evaluation context of a configuration: its variables
// (from the inputs and defaults) and its locals, evaluated in dependency
// order. Only this context is visible to expressions: nothing is read from
// the environment or the disk.
// inSourceOrder lists attrs (a map) as they are written, so that
// diagnostics and later-wins rules follow the file.
func inSourceOrder(attrs hcl.Attributes) []*hcl.Attribute {
	ordered := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		ordered = append(ordered, a)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].Range.Start.Byte < ordered[j].Range.Start.Byte })
	return ordered
}

func (d *decoder) scope(blocks []*hcl.Block, in Inputs, varFiles map[string][]byte) *hcl.EvalContext {
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
			for _, a := range inSourceOrder(attrs) {
				if prev, dup := seenLocal[a.Name]; dup {
					d.errorf(a.NameRange, "Duplicate local value", "Local value %q was already defined at %s.", a.Name, prev)
					continue
				}
				seenLocal[a.Name] = a.NameRange
				localAttrs = append(localAttrs, a)
			}
		}
	}

	if d.moduleInputs != nil {
		d.assignInputs(d.moduleInputs)
	} else {
		d.assignInputs(d.collectInputs(in, varFiles))
	}
	varVals := map[string]cty.Value{}
	for _, n := range sortedKeys(d.cfg.Variables) {
		v := d.cfg.Variables[n]
		d.finishVariable(v, in.Partial || in.SecretsUnknown && v.Sensitive)
		varVals[n] = v.Value
	}
	ctx.Variables["var"] = cty.ObjectVal(varVals)
	for _, n := range sortedKeys(d.cfg.Variables) {
		d.checkVariable(d.cfg.Variables[n])
	}

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

// assignInputs gives each variable the last value of the sources (they come
// in precedence order, lowest first).
func (d *decoder) assignInputs(srcs []varSource) {
	for _, src := range srcs {
		v, ok := d.cfg.Variables[src.name]
		if !ok {
			switch {
			case strings.HasPrefix(src.from, EnvVarPrefix):
				// The environment may hold values for other configurations.
			case strings.HasPrefix(src.from, "module "):
				r := src.rng
				d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported argument",
					Detail: fmt.Sprintf("The %s has no variable named %q.%s", src.from, src.name, suggest.DidYouMean(src.name, sortedKeys(d.cfg.Variables))), Subject: r})
			case src.from == "-var":
				d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
					Detail: fmt.Sprintf("-var %s=... names no variable block.%s Declare it: variable %q {}.", src.name, suggest.DidYouMean(src.name, sortedKeys(d.cfg.Variables)), src.name)})
			default:
				// As Terraform: a file may serve several configurations, so
				// an unknown name there is a warning.
				d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Value for undeclared variable",
					Detail: fmt.Sprintf("%s sets %q, but no variable block declares it.%s", src.from, src.name, suggest.DidYouMean(src.name, sortedKeys(d.cfg.Variables))), Subject: src.rng})
			}
			continue
		}
		var val cty.Value
		var err error
		if src.raw {
			val, err = parseVarValue(src.val.AsString(), v.Type)
		} else {
			val, err = convert.Convert(src.val, v.Type)
		}
		if err != nil {
			subject := src.rng
			if subject == nil {
				r := v.DeclRange
				subject = &r
			}
			shown := src.from
			if src.raw && !v.Sensitive {
				shown = fmt.Sprintf("%s %s=%s", src.from, src.name, src.val.AsString())
				if strings.HasPrefix(src.from, EnvVarPrefix) {
					shown = src.from + "=" + src.val.AsString() // as in the environment
				}
			}
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail: fmt.Sprintf("%s: the value for %q does not fit its type %s: %v.", shown, src.name, typeexpr.TypeString(v.Type), cleanErr(err, v.Sensitive)), Subject: subject})
			v.Value, v.ValueFrom = cty.UnknownVal(v.Type), "invalid"
			continue
		}
		v.Value, v.ValueFrom, v.valueRange = val, src.from, src.rng
	}
}

// cleanErr keeps a sensitive value out of a conversion error.
func cleanErr(err error, sensitive bool) string {
	if sensitive {
		return "(the value is sensitive and not shown)"
	}
	return err.Error()
}

// finishVariable applies the default, nullable and the sensitive mark.
func (d *decoder) finishVariable(v *Variable, partial bool) {
	if v.Value == cty.NilVal {
		switch {
		case v.Default != cty.NilVal:
			v.Value, v.ValueFrom, v.valueRange = v.Default, "default", v.defaultRange
		case partial:
			v.Value = cty.UnknownVal(v.Type)
		default:
			r := v.DeclRange
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable",
				Detail: fmt.Sprintf("Variable %q has no default: pass -var %s=VALUE, set %s%s, or write it in %s.", v.Name, v.Name, EnvVarPrefix, v.Name, VarFileName), Subject: &r})
			// Unknown, so that what depends on it is skipped rather than
			// reported a second time.
			v.Value = cty.UnknownVal(v.Type)
		}
	}
	if v.Value.IsKnown() && v.Value.IsNull() && !v.Nullable {
		if v.Default != cty.NilVal && !v.Default.IsNull() {
			v.Value, v.ValueFrom, v.valueRange = v.Default, "default", v.defaultRange
		} else {
			subject := v.valueRange
			if subject == nil {
				r := v.DeclRange
				subject = &r
			}
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Required variable is null",
				Detail: fmt.Sprintf("Variable %q has nullable = false: give it a value other than null.", v.Name), Subject: subject})
			v.Value = cty.UnknownVal(v.Type)
		}
	}
	if v.Sensitive {
		v.Value = v.Value.Mark(SensitiveMark)
	}
}

// checkVariable runs a variable's validation blocks. A condition sees only
// the variable itself and the functions; an unknown value (validate without
// inputs) is not checked.
func (d *decoder) checkVariable(v *Variable) {
	if len(v.Validations) == 0 || !v.Value.IsWhollyKnown() {
		return
	}
	ctx := evalContext().NewChild()
	ctx.Variables = map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.Name: v.Value})}
	for _, val := range v.Validations {
		for _, t := range val.Condition.Variables() {
			if t.RootName() != "var" || len(t) < 2 {
				d.errorf(t.SourceRange(), "Invalid reference in variable validation", "The condition of variable %q may refer only to var.%s.", v.Name, v.Name)
				return
			}
			if step, ok := t[1].(hcl.TraverseAttr); !ok || step.Name != v.Name {
				d.errorf(t.SourceRange(), "Invalid reference in variable validation", "The condition of variable %q may refer only to var.%s.", v.Name, v.Name)
				return
			}
		}
		res, ds := val.Condition.Value(ctx)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		res, _ = res.Unmark()
		if !res.IsKnown() {
			continue
		}
		res, err := convert.Convert(res, cty.Bool)
		if err != nil || res.IsNull() {
			d.errorf(val.Condition.Range(), "Invalid variable validation result", "The condition must be true or false.")
			continue
		}
		if res.True() {
			continue
		}
		msg := "The value is not valid."
		if m, ds := val.ErrorMessage.Value(ctx); !ds.HasErrors() {
			m, _ = m.Unmark()
			if m.Type() == cty.String && m.IsKnown() && !m.IsNull() {
				msg = m.AsString()
			}
		}
		subject := v.valueRange
		if subject == nil {
			r := val.Condition.Range()
			subject = &r
		}
		from := v.ValueFrom
		if from == "default" {
			from = "its default"
		}
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail: fmt.Sprintf("%s\n\nThe value of var.%s (from %s) fails the validation rule at %s.", msg, v.Name, from, val.DeclRange), Subject: subject})
	}
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
	v := &Variable{Name: blk.Labels[0], Type: cty.DynamicPseudoType, DeclRange: blk.DefRange, Nullable: true}
	content, ds := blk.Body.Content(variableSchema)
	d.add(ds)
	if a, ok := content.Attributes["type"]; ok {
		ty, ds := typeexpr.TypeConstraint(a.Expr)
		d.add(ds)
		if !ds.HasErrors() {
			v.Type = ty
		}
	}
	constant := func(name string, ty cty.Type, what string) cty.Value {
		a, ok := content.Attributes[name]
		if !ok {
			return cty.NilVal
		}
		val, ds := a.Expr.Value(nil)
		d.add(ds)
		if ds.HasErrors() {
			return cty.NilVal
		}
		cv, err := convert.Convert(val, ty)
		if err != nil || cv.IsNull() || !cv.IsKnown() {
			d.errorf(a.Expr.Range(), "Invalid value", "%s must be %s, written as a constant.", name, what)
			return cty.NilVal
		}
		return cv
	}
	if val := constant("description", cty.String, "a string"); val != cty.NilVal {
		v.Description = val.AsString()
	}
	if val := constant("sensitive", cty.Bool, "true or false"); val != cty.NilVal {
		v.Sensitive = val.True()
	}
	if val := constant("nullable", cty.Bool, "true or false"); val != cty.NilVal {
		v.Nullable = val.True()
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
				d.errorf(a.Expr.Range(), "Invalid default value for variable", "The default of %q does not match its type: %s.", v.Name, cleanErr(err, v.Sensitive))
			} else {
				v.Default = cv
				r := a.Expr.Range()
				v.defaultRange = &r
			}
		}
	}
	for _, b := range content.Blocks {
		vc, ds := b.Body.Content(validationSchema)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		v.Validations = append(v.Validations, &Validation{Condition: vc.Attributes["condition"].Expr, ErrorMessage: vc.Attributes["error_message"].Expr, DeclRange: b.DefRange})
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
	// A number or a bool is read from the text as Terraform reads it
	// (" 8", "1e3", "true"), and a word that is neither is said plainly.
	switch ty {
	case cty.Number:
		if v, err := convert.Convert(cty.StringVal(strings.TrimSpace(raw)), ty); err == nil {
			return v, nil
		}
		return cty.NilVal, fmt.Errorf("%q is not a number", raw)
	case cty.Bool:
		if v, err := convert.Convert(cty.StringVal(strings.TrimSpace(raw)), ty); err == nil {
			return v, nil
		}
		return cty.NilVal, fmt.Errorf("%q is not true or false", raw)
	}
	bad := func(why string) error {
		return fmt.Errorf("%q is not a %s value (%s); write it as HCL, such as 8, true, [0, 1] or {a = \"b\"}, quoted for the shell", raw, typeexpr.TypeString(ty), why)
	}
	// HCL reads a bare word as a variable reference.
	summary := func(ds hcl.Diagnostics) string {
		if ds[0].Summary == "Variables not allowed" {
			return "a word without quotes"
		}
		return ds[0].Summary
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "<value for -var>", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, bad(summary(diags))
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, bad(summary(diags))
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
