package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// OutputValue is one output block's value.
type OutputValue struct {
	Name      string
	Value     cty.Value // cty.NilVal: the output has no value
	Sensitive bool
}

// Output is roofline output's view.
type Output interface {
	// Output prints one output, asked by name: its value even when
	// sensitive (as terraform output NAME). false: it could not be
	// printed, and stderr says why.
	Output(o OutputValue) bool
	// Outputs prints every output; those without a value are left out.
	Outputs(outs []OutputValue) bool
}

// NewOutput returns the output view of type vt (ViewHuman, ViewJSON or
// ViewRaw). plain is stdout unmasked: -raw and -json print a value asked
// by name there, on purpose.
func NewOutput(vt ViewType, v *View, plain io.Writer) Output {
	switch vt {
	case ViewJSON:
		return OutputJSON{v, plain}
	case ViewRaw:
		return OutputRaw{OutputHuman{v}, plain}
	}
	return OutputHuman{v}
}

func noValue(v *View, o OutputValue) bool {
	if o.Value == cty.NilVal {
		v.Errorf("output %s has no value", o.Name)
		return true
	}
	return false
}

// OutputHuman prints values as HCL, sensitive ones hidden in the list.
type OutputHuman struct{ view *View }

func (h OutputHuman) Output(o OutputValue) bool {
	if noValue(h.view, o) {
		return false
	}
	fmt.Fprintln(h.view.Out, hclValue(o.Value))
	return true
}

func (h OutputHuman) Outputs(outs []OutputValue) bool {
	if len(outs) == 0 {
		fmt.Fprintln(h.view.Err, "Warning: No outputs found\n\nThe configuration has no output blocks. Declare one, such as:\n  output \"qwen3_base_url\" {\n    value = server.qwen3.base_url\n  }")
		return true
	}
	for _, o := range outs {
		switch {
		case o.Value == cty.NilVal:
			continue
		case o.Sensitive:
			fmt.Fprintf(h.view.Out, "%s = (sensitive value)\n", o.Name)
		default:
			fmt.Fprintf(h.view.Out, "%s = %s\n", o.Name, hclValue(o.Value))
		}
	}
	return true
}

// OutputJSON prints Terraform's output -json shapes.
type OutputJSON struct {
	view  *View
	plain io.Writer
}

func (j OutputJSON) Output(o OutputValue) bool {
	if noValue(j.view, o) {
		return false
	}
	val, _, err := outputJSON(o.Value)
	if err != nil {
		j.view.Errorf("output %s: %v", o.Name, err)
		return false
	}
	writeJSON(j.plain, val)
	return true
}

func (j OutputJSON) Outputs(outs []OutputValue) bool {
	out := map[string]any{}
	for _, o := range outs {
		if o.Value == cty.NilVal {
			continue
		}
		val, ty, err := outputJSON(o.Value)
		if err != nil {
			j.view.Errorf("output %s: %v", o.Name, err)
			return false
		}
		out[o.Name] = map[string]any{"sensitive": o.Sensitive, "type": ty, "value": val}
	}
	writeJSON(j.view.Out, out)
	return true
}

// OutputRaw prints a string, number or bool as it is, for shell scripts.
type OutputRaw struct {
	OutputHuman
	plain io.Writer
}

func (r OutputRaw) Output(o OutputValue) bool {
	if noValue(r.view, o) {
		return false
	}
	v := o.Value
	switch v.Type() {
	case cty.String:
		fmt.Fprint(r.plain, v.AsString())
	case cty.Number:
		fmt.Fprint(r.plain, v.AsBigFloat().Text('f', -1))
	case cty.Bool:
		fmt.Fprint(r.plain, v.True())
	default:
		fmt.Fprintf(r.view.Err, "Error: Unsupported value for raw output\n\nOutput %q is %s; -raw prints only strings, numbers and bools. Use -json.\n", o.Name, v.Type().FriendlyName())
		return false
	}
	return true
}

// outputJSON returns a value and its type as JSON, as terraform output
// -json writes them.
func outputJSON(v cty.Value) (json.RawMessage, json.RawMessage, error) {
	val, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, nil, err
	}
	ty, err := ctyjson.MarshalType(v.Type())
	if err != nil {
		return nil, nil, err
	}
	return val, ty, nil
}

// hclValue renders a value as HCL, formatted.
func hclValue(v cty.Value) string {
	toks := hclwrite.TokensForValue(v)
	return strings.TrimSpace(string(hclwrite.Format(toks.Bytes())))
}
