package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

func init() {
	register(&Command{
		Name:     "output",
		Synopsis: "Show the values of output blocks",
		Usage: `Usage: roofline [global options] output [options] [NAME]

  Prints the configuration's output values: what gateways and clients need,
  such as each server's base URL and served model name (server.NAME.base_url,
  .url, .port, .served_model_name, .api_key_env; never an API key). The
  values come from the configuration, as apply makes it true: run it after
  roofline apply.

  Without NAME, every output is listed as NAME = VALUE, sensitive ones as
  (sensitive value). With NAME, that output's value is printed, in clear
  even when sensitive (as terraform output NAME does).

Options:
  -json   Print JSON: without NAME an object of {sensitive, type, value}
          per output (Terraform's shape), with NAME the value.
  -raw    Print the value of NAME, a string, number or bool, as it is
          (no quotes, no newline), for shell scripts.
` + varsUsage,
		Run: runOutput,
	})
}

func runOutput(m *Meta, args []string) int {
	fs := newFlags("output")
	jsonOut := fs.Bool("json", false, "")
	raw := fs.Bool("raw", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 1 {
		return usageError(m, "output", "expected at most one output name")
	}
	if *jsonOut && *raw {
		return usageError(m, "output", "-json and -raw exclude each other")
	}
	if *raw && fs.NArg() == 0 {
		return usageError(m, "output", "-raw needs an output NAME")
	}
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	if fs.NArg() == 1 {
		name := fs.Arg(0)
		o, ok := cfg.Outputs[name]
		if !ok {
			fmt.Fprintf(m.Err, "Error: Output %q not found\n\nThe configuration has no output block named %q.%s\n", name, name, suggest.DidYouMean(name, cfg.OutputNames()))
			return ExitError
		}
		return printOutput(m, o, *jsonOut, *raw)
	}
	if *jsonOut {
		out := map[string]any{}
		for _, n := range cfg.OutputNames() {
			o := cfg.Outputs[n]
			if o.Value == cty.NilVal {
				continue
			}
			val, ty, err := outputJSON(o.Value)
			if err != nil {
				fmt.Fprintf(m.Err, "Error: output %s: %v\n", n, err)
				return ExitError
			}
			out[n] = map[string]any{"sensitive": o.Sensitive, "type": ty, "value": val}
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(m.Out, string(b))
		return ExitOK
	}
	if len(cfg.Outputs) == 0 {
		fmt.Fprintln(m.Err, "Warning: No outputs found\n\nThe configuration has no output blocks. Declare one, such as:\n  output \"qwen3_base_url\" {\n    value = server.qwen3.base_url\n  }")
		return ExitOK
	}
	for _, n := range cfg.OutputNames() {
		o := cfg.Outputs[n]
		switch {
		case o.Value == cty.NilVal:
			continue
		case o.Sensitive:
			fmt.Fprintf(m.Out, "%s = (sensitive value)\n", n)
		default:
			fmt.Fprintf(m.Out, "%s = %s\n", n, hclValue(o.Value))
		}
	}
	return ExitOK
}

func printOutput(m *Meta, o *config.Output, jsonOut, raw bool) int {
	v := o.Value
	if v == cty.NilVal {
		fmt.Fprintf(m.Err, "Error: output %s has no value\n", o.Name)
		return ExitError
	}
	// Asked by name with -raw or -json: the value itself, even a sensitive
	// one (as terraform output), so unmasked.
	out := m.Out
	if (raw || jsonOut) && m.plainOut != nil {
		out = m.plainOut
	}
	switch {
	case raw:
		switch v.Type() {
		case cty.String:
			fmt.Fprint(out, v.AsString())
		case cty.Number:
			fmt.Fprint(out, v.AsBigFloat().Text('f', -1))
		case cty.Bool:
			fmt.Fprint(out, v.True())
		default:
			fmt.Fprintf(m.Err, "Error: Unsupported value for raw output\n\nOutput %q is %s; -raw prints only strings, numbers and bools. Use -json.\n", o.Name, v.Type().FriendlyName())
			return ExitError
		}
	case jsonOut:
		val, _, err := outputJSON(v)
		if err != nil {
			fmt.Fprintf(m.Err, "Error: output %s: %v\n", o.Name, err)
			return ExitError
		}
		b, _ := json.MarshalIndent(val, "", "  ")
		fmt.Fprintln(out, string(b))
	default:
		fmt.Fprintln(m.Out, hclValue(v))
	}
	return ExitOK
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
