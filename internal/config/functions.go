package config

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions returns the functions expressions may call, by name: the pure
// functions of go-cty's standard library under Terraform's names, HCL's
// try, can and convert, and a few string predicates. None reads a file, the
// environment, the clock or the network, so a plan in code review sees
// exactly what the host will see.
func Functions() map[string]function.Function { return functions() }

var functions = sync.OnceValue(func() map[string]function.Function {
	return map[string]function.Function{
		// Numbers.
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"log":      stdlib.LogFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc,
		"pow":      stdlib.PowFunc,
		"signum":   stdlib.SignumFunc,

		// Strings.
		"chomp":        stdlib.ChompFunc,
		"endswith":     endsWithFunc,
		"format":       stdlib.FormatFunc,
		"formatlist":   stdlib.FormatListFunc,
		"indent":       stdlib.IndentFunc,
		"join":         stdlib.JoinFunc,
		"lower":        stdlib.LowerFunc,
		"regex":        stdlib.RegexFunc,
		"regexall":     stdlib.RegexAllFunc,
		"regexreplace": stdlib.RegexReplaceFunc,
		"replace":      stdlib.ReplaceFunc,
		"split":        stdlib.SplitFunc,
		"startswith":   startsWithFunc,
		"strcontains":  strContainsFunc,
		"strlen":       stdlib.StrlenFunc,
		"strrev":       stdlib.ReverseFunc,
		"substr":       stdlib.SubstrFunc,
		"title":        stdlib.TitleFunc,
		"trim":         stdlib.TrimFunc,
		"trimprefix":   stdlib.TrimPrefixFunc,
		"trimspace":    stdlib.TrimSpaceFunc,
		"trimsuffix":   stdlib.TrimSuffixFunc,
		"upper":        stdlib.UpperFunc,

		// Collections.
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        coalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"index":           stdlib.IndexFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"lookup":          stdlib.LookupFunc,
		"merge":           stdlib.MergeFunc,
		"range":           stdlib.RangeFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,

		// Encoding and dates (pure: formatdate formats a given timestamp).
		"csvdecode":  stdlib.CSVDecodeFunc,
		"formatdate": stdlib.FormatDateFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"timeadd":    stdlib.TimeAddFunc,

		// Types and errors.
		"can":      tryfunc.CanFunc,
		"convert":  typeexpr.ConvertFunc,
		"tobool":   stdlib.MakeToFunc(cty.Bool),
		"tolist":   stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":    stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber": stdlib.MakeToFunc(cty.Number),
		"toset":    stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring": stdlib.MakeToFunc(cty.String),
		"try":      tryfunc.TryFunc,
	}
})

// FunctionNames returns the names of Functions, sorted.
func FunctionNames() []string {
	names := make([]string, 0, len(functions()))
	for n := range functions() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// evalContext is the context attribute expressions are evaluated in: the
// functions and no variables.
var evalContext = sync.OnceValue(func() *hcl.EvalContext {
	return &hcl.EvalContext{Functions: functions()}
})

// lengthFunc is Terraform's length: the number of elements of a collection,
// or of characters of a string (cty's length knows only collections).
var lengthFunc = function.New(&function.Spec{
	Description: "The number of elements of a list, set, map, tuple or object, or of characters of a string.",
	Params: []function.Parameter{{
		Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true, AllowMarked: true,
	}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		if ty == cty.String || ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType() || ty == cty.DynamicPseudoType {
			return cty.Number, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "length of %s is not defined: give a string, list, set, map, tuple or object", ty.FriendlyName())
	},
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		v, marks := args[0].Unmark()
		var out cty.Value
		var err error
		switch ty := v.Type(); {
		case ty == cty.DynamicPseudoType || !v.IsKnown():
			return cty.UnknownVal(cty.Number).WithMarks(marks), nil
		case ty == cty.String:
			out, err = stdlib.Strlen(v)
		case ty.IsTupleType():
			out = cty.NumberIntVal(int64(ty.Length()))
		case ty.IsObjectType():
			out = cty.NumberIntVal(int64(len(ty.AttributeTypes())))
		default:
			out = v.Length()
		}
		return out.WithMarks(marks), err
	},
})

// coalesceFunc is Terraform's coalesce: the first argument that is neither
// null nor an empty string (cty's skips only nulls).
var coalesceFunc = function.New(&function.Spec{
	Description: "The first argument that is not null or an empty string.",
	VarParam: &function.Parameter{
		Name: "vals", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowDynamicType: true, AllowNull: true,
	},
	Type: func(args []cty.Value) (cty.Type, error) { return stdlib.CoalesceFunc.ReturnTypeForValues(args) },
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, a := range args {
			if !a.IsKnown() {
				return cty.UnknownVal(retType), nil
			}
			if a.IsNull() {
				continue
			}
			v, err := convert.Convert(a, retType)
			if err != nil {
				return cty.NilVal, err
			}
			if v.Type() == cty.String && v.AsString() == "" {
				continue
			}
			return v, nil
		}
		return cty.NilVal, fmt.Errorf("no non-null, non-empty-string arguments")
	},
})

func stringPredicate(desc string, f func(s, sub string) bool) function.Function {
	return function.New(&function.Spec{
		Description: desc,
		Params: []function.Parameter{
			{Name: "string", Type: cty.String},
			{Name: "substring", Type: cty.String},
		},
		Type:         function.StaticReturnType(cty.Bool),
		RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

var (
	startsWithFunc  = stringPredicate("Whether the string starts with the prefix.", strings.HasPrefix)
	endsWithFunc    = stringPredicate("Whether the string ends with the suffix.", strings.HasSuffix)
	strContainsFunc = stringPredicate("Whether the string contains the substring.", strings.Contains)
)
