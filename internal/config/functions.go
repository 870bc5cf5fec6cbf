package config

import (
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// evalContext is the context attribute expressions are evaluated in: a small
// set of pure functions and no variables. Nothing reads files, the
// environment or the network while a configuration loads, so a plan in code
// review sees exactly what the host will see.
var evalContext = sync.OnceValue(func() *hcl.EvalContext {
	return &hcl.EvalContext{Functions: map[string]function.Function{
		"concat":     stdlib.ConcatFunc,
		"format":     stdlib.FormatFunc,
		"join":       stdlib.JoinFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"lower":      stdlib.LowerFunc,
		"max":        stdlib.MaxFunc,
		"min":        stdlib.MinFunc,
		"merge":      stdlib.MergeFunc,
		"range":      stdlib.RangeFunc,
		"replace":    stdlib.ReplaceFunc,
		"split":      stdlib.SplitFunc,
		"tostring":   stdlib.MakeToFunc(cty.String),
		"trimspace":  stdlib.TrimSpaceFunc,
		"upper":      stdlib.UpperFunc,
	}}
})
