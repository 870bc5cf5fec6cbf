package config

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/zclconf/go-cty/cty"
)

// instance is one copy of an engine, model or server block: the block
// itself, or one element of its for_each or count.
type instance struct {
	name string // "web", `web["a"]`, "web[0]": the address without the block type
	key  string // `["a"]`, "[0]", "" for a block without repetition
	ctx  *hcl.EvalContext
	body hcl.Body // dynamic blocks expanded
}

// repetition is how a block is repeated, for the reference objects.
type repetition int

const (
	single repetition = iota
	forEach
	count
)

var repetitionSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "for_each"}, {Name: "count"}}}

// InstanceName is the name of one instance of block name, as it appears in
// addresses: web["a"] for a for_each key, web[0] for a count index.
func InstanceName(name string, key cty.Value) string {
	if key.Type() == cty.Number {
		return name + "[" + key.AsBigFloat().Text('f', -1) + "]"
	}
	return name + "[" + strconv.Quote(key.AsString()) + "]"
}

// expand evaluates a block's for_each or count and returns its instances,
// each with the context its body is evaluated in (each.key and each.value,
// or count.index). ctx is the context of the block's expressions.
func (d *decoder) expand(blk *hcl.Block, ctx *hcl.EvalContext) ([]instance, repetition) {
	name := blk.Labels[0]
	content, rest, ds := blk.Body.PartialContent(repetitionSchema)
	d.add(ds)
	one := func(name, key string, c *hcl.EvalContext) instance {
		return instance{name: name, key: key, ctx: c, body: dynblock.Expand(rest, c)}
	}
	fe, hasForEach := content.Attributes["for_each"]
	cn, hasCount := content.Attributes["count"]
	switch {
	case hasForEach && hasCount:
		d.errorf(cn.NameRange, "Invalid combination of \"count\" and \"for_each\"",
			"The \"count\" and \"for_each\" meta-arguments are mutually exclusive; use one of them.")
		return nil, single
	case hasForEach:
		return d.expandForEach(name, fe, ctx, one), forEach
	case hasCount:
		return d.expandCount(name, cn, ctx, one), count
	}
	return []instance{one(name, "", ctx)}, single
}

func (d *decoder) expandForEach(name string, attr *hcl.Attribute, ctx *hcl.EvalContext, one func(string, string, *hcl.EvalContext) instance) []instance {
	v, ds := attr.Expr.Value(ctx)
	d.add(ds)
	if ds.HasErrors() {
		return nil
	}
	if v.HasMark(SensitiveMark) {
		d.errorf(attr.Expr.Range(), "Invalid for_each argument",
			"Sensitive values cannot be used as for_each: the keys become part of each server's address, which plans and logs show.")
		return nil
	}
	if !v.IsWhollyKnown() {
		// A variable without a value (reported already, or validate
		// without inputs): there is nothing to repeat yet.
		return nil
	}
	if v.IsNull() {
		d.errorf(attr.Expr.Range(), "Invalid for_each argument", "for_each is null; give it a map, an object or a set of strings (toset([...])).")
		return nil
	}
	ty := v.Type()
	var out []instance
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		keys := make([]string, 0, v.LengthInt())
		vals := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			keys = append(keys, k.AsString())
			vals[k.AsString()] = ev
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !d.validKey(attr, k) {
				return nil
			}
			out = append(out, d.eachInstance(name, cty.StringVal(k), vals[k], ctx, one))
		}
	case ty.IsSetType() && (ty.ElementType() == cty.String || ty.ElementType() == cty.DynamicPseudoType):
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if ev.IsNull() {
				d.errorf(attr.Expr.Range(), "Invalid for_each argument", "A set for for_each must not contain null.")
				return nil
			}
			if ev.Type() != cty.String {
				d.errorf(attr.Expr.Range(), "Invalid for_each argument", "A set for for_each must hold strings: each becomes an instance key.")
				return nil
			}
			if !d.validKey(attr, ev.AsString()) {
				return nil
			}
			out = append(out, d.eachInstance(name, ev, ev, ctx, one))
		}
	case ty.IsSetType():
		d.errorf(attr.Expr.Range(), "Invalid for_each argument", "A set for for_each must hold strings; this one holds %s.", ty.ElementType().FriendlyName())
		return nil
	default:
		d.errorf(attr.Expr.Range(), "Invalid for_each argument",
			"for_each takes a map, an object or a set of strings, not %s. For a list, write toset(LIST) (its elements become the keys), or a map: { for g in LIST : tostring(g) => g }.", ty.FriendlyName())
		return nil
	}
	return out
}

// validKey checks a for_each key: it names the server's log file and
// appears in every address, so it holds no slash or control character.
func (d *decoder) validKey(attr *hcl.Attribute, k string) bool {
	if k == "" || strings.ContainsAny(k, "/\\\"") || strings.IndexFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		d.errorf(attr.Expr.Range(), "Invalid for_each key",
			"The key %q cannot name an instance: keys are part of addresses and file names, so they are not empty and hold no slash, backslash, quote or control character.", k)
		return false
	}
	return true
}

func (d *decoder) eachInstance(name string, key, val cty.Value, ctx *hcl.EvalContext, one func(string, string, *hcl.EvalContext) instance) instance {
	c := ctx.NewChild()
	c.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": key, "value": val})}
	in := InstanceName(name, key)
	return one(in, in[len(name):], c)
}

func (d *decoder) expandCount(name string, attr *hcl.Attribute, ctx *hcl.EvalContext, one func(string, string, *hcl.EvalContext) instance) []instance {
	v, ds := attr.Expr.Value(ctx)
	d.add(ds)
	if ds.HasErrors() {
		return nil
	}
	v, _ = v.Unmark()
	if !v.IsKnown() {
		return nil
	}
	if v.IsNull() || v.Type() != cty.Number {
		d.errorf(attr.Expr.Range(), "Invalid count argument", "count must be a whole number.")
		return nil
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || n < 0 || n > 4096 {
		d.errorf(attr.Expr.Range(), "Invalid count argument", "count must be a whole number from 0 to 4096, not %s.", bf.Text('f', -1))
		return nil
	}
	out := make([]instance, 0, n)
	for i := int64(0); i < n; i++ {
		c := ctx.NewChild()
		idx := cty.NumberIntVal(i)
		c.Variables = map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": idx})}
		in := InstanceName(name, idx)
		out = append(out, one(in, in[len(name):], c))
	}
	return out
}

// refObject is the value an expression sees for engine.NAME or model.NAME:
// the block's address (what a server's engine and model attributes take)
// and its attributes. For a block with for_each it is a map of these by
// key, with count a list.
func refObjects(kind string, byBlock map[string][]refEntry, reps map[string]repetition) cty.Value {
	out := map[string]cty.Value{}
	for block, entries := range byBlock {
		switch reps[block] {
		case single:
			if len(entries) == 1 {
				out[block] = entries[0].val
			}
		case forEach:
			m := map[string]cty.Value{}
			for _, e := range entries {
				m[e.key] = e.val
			}
			out[block] = cty.ObjectVal(m)
		case count:
			l := make([]cty.Value, len(entries))
			for i, e := range entries {
				l[i] = e.val
			}
			out[block] = cty.TupleVal(l)
		}
	}
	return cty.ObjectVal(out)
}

// refEntry is one instance's reference object and its for_each key.
type refEntry struct {
	key string
	val cty.Value
}

// eachKey returns the for_each key (unquoted) of an instance key such as
// ["a"], or "" for others.
func eachKey(key string) string {
	if len(key) < 4 || key[0] != '[' || key[1] != '"' {
		return ""
	}
	k, err := strconv.Unquote(key[1 : len(key)-1])
	if err != nil {
		return ""
	}
	return k
}

func addressAttr(kind, name string) cty.Value { return cty.StringVal(fmt.Sprintf("%s.%s", kind, name)) }
