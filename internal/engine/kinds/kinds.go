// Package kinds names the engine kinds roofline runs, once. It imports
// nothing, so that config (which engine itself imports) can validate an
// engine's kind; everything an engine kind knows is in internal/engine,
// behind engine.Kind, selected by these names (engine.Lookup).
package kinds

import (
	"slices"
	"strconv"
	"strings"
)

// The engine kinds: the values of an engine block's kind attribute.
const (
	VLLM   = "vllm"
	SGLang = "sglang"
)

// names lists every kind, in the order messages name them. A new kind is
// one constant above, one entry here, and its file set in internal/engine
// registered in engine's registry (engine.TestRegistry checks both agree).
var names = []string{VLLM, SGLang}

// Names returns every kind roofline runs.
func Names() []string { return slices.Clone(names) }

// Known reports whether name is a kind roofline runs.
func Known(name string) bool { return slices.Contains(names, name) }

// Or lists the kinds for a message: "vllm or sglang", quoted (`"vllm" or
// "sglang"`) when quote is set.
func Or(quote bool) string {
	words := Names()
	for i, w := range words {
		if quote {
			words[i] = strconv.Quote(w)
		}
	}
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
