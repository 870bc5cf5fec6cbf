package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// Sensitive is the set of attribute paths of one block whose values derive
// from a sensitive variable (Terraform's marks, carried through every
// expression and function): "env" for a whole map or list, "env.HF_TOKEN"
// for one key, "extra_args[3]" for one element, "api_key" for a plain
// attribute. Renderers mask these values (the secrets helper's job); the
// configuration keeps them in clear because the engine needs them.
type Sensitive map[string]bool

// Attr reports whether attribute name is sensitive, as a whole or in part.
func (s Sensitive) Attr(name string) bool {
	for p := range s {
		if p == name || strings.HasPrefix(p, name+".") || strings.HasPrefix(p, name+"[") {
			return true
		}
	}
	return false
}

// Key reports whether the key of map attribute name is sensitive (the whole
// map, or that key).
func (s Sensitive) Key(name, key string) bool { return s[name] || s[name+"."+key] }

// Index reports whether element i of list attribute name is sensitive.
func (s Sensitive) Index(name string, i int) bool {
	return s[name] || s[fmt.Sprintf("%s[%d]", name, i)]
}

// Paths returns the sensitive paths sorted.
func (s Sensitive) Paths() []string { return sortedKeys(s) }

// SensitiveValues returns every string value of the configuration that
// derives from a sensitive variable (each variable's value, flattened to its
// strings), longest first, so a renderer can mask them wherever
// they end up: argv, env, JSON. Empty strings are left out.
func (c *Config) SensitiveValues() []string {
	seen := map[string]bool{}
	for _, v := range c.Variables {
		if !v.Sensitive || v.Value == cty.NilVal {
			continue
		}
		val, _ := v.Value.UnmarkDeep()
		collectStrings(val, seen)
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func collectStrings(v cty.Value, into map[string]bool) {
	if !v.IsKnown() || v.IsNull() {
		return
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		if s := v.AsString(); s != "" {
			into[s] = true
		}
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			collectStrings(ev, into)
		}
	}
}

// pathString writes a cty path as "[0]", ".key": appended to an attribute
// name it gives "env.HF_TOKEN" or "extra_args[3]".
func pathString(p cty.Path) string {
	var b strings.Builder
	for _, step := range p {
		switch s := step.(type) {
		case cty.GetAttrStep:
			b.WriteString("." + s.Name)
		case cty.IndexStep:
			if s.Key.Type() == cty.String {
				b.WriteString("." + s.Key.AsString())
			} else if s.Key.Type() == cty.Number {
				b.WriteString("[" + s.Key.AsBigFloat().Text('f', -1) + "]")
			}
		}
	}
	return b.String()
}
