package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Moved is a moved block: server From was renamed To. plan re-keys the
// running server (state, log file, proxy) instead of destroying it and
// creating the new name; the process is not touched.
type Moved struct {
	From, To  string // instance names: "beta", `web["a"]`
	DeclRange hcl.Range
}

var movedSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "from", Required: true}, {Name: "to", Required: true}},
}

// decodeMoved reads moved blocks; run after the servers are decoded.
func (d *decoder) decodeMoved(blocks []*hcl.Block) {
	seenFrom, seenTo := map[string]hcl.Range{}, map[string]hcl.Range{}
	for _, blk := range blocks {
		content, ds := blk.Body.Content(movedSchema)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		from, ok1 := d.serverAddr(content.Attributes["from"])
		to, ok2 := d.serverAddr(content.Attributes["to"])
		if !ok1 || !ok2 {
			continue
		}
		fromRng, toRng := content.Attributes["from"].Expr.Range(), content.Attributes["to"].Expr.Range()
		switch {
		case from == to:
			d.errorf(toRng, "Redundant move", "from and to are both server.%s; remove this moved block.", from)
			continue
		case d.cfg.Servers[from] != nil:
			d.errorf(fromRng, "Moved object still exists",
				"server.%s is still declared in the configuration, so it cannot have moved. Rename its block to %s, or remove this moved block.", from, to)
			continue
		}
		if prev, dup := seenFrom[from]; dup {
			d.errorf(fromRng, "Ambiguous move", "server.%s is already moved by the moved block at %s.", from, prev)
			continue
		}
		if prev, dup := seenTo[to]; dup {
			d.errorf(toRng, "Ambiguous move", "Two moved blocks move to server.%s; the other is at %s.", to, prev)
			continue
		}
		seenFrom[from], seenTo[to] = fromRng, toRng
		d.cfg.Moved = append(d.cfg.Moved, &Moved{From: from, To: to, DeclRange: blk.DefRange})
	}
}

// serverAddr reads a static server address: server.NAME or
// server.NAME[KEY] (a literal key).
func (d *decoder) serverAddr(attr *hcl.Attribute) (string, bool) {
	trav, ds := hcl.AbsTraversalForExpr(attr.Expr)
	bad := func() (string, bool) {
		d.errorf(attr.Expr.Range(), "Invalid address",
			"Write a server's address without quotes: server.NAME, or server.NAME[\"key\"] / server.NAME[0] for an instance.")
		return "", false
	}
	if ds.HasErrors() || len(trav) < 2 || len(trav) > 3 || trav.RootName() != "server" {
		return bad()
	}
	step, ok := trav[1].(hcl.TraverseAttr)
	if !ok {
		return bad()
	}
	name := step.Name
	if len(trav) == 3 {
		idx, ok := trav[2].(hcl.TraverseIndex)
		if !ok {
			return bad()
		}
		switch idx.Key.Type() {
		case cty.String:
			name = InstanceName(name, idx.Key)
		case cty.Number:
			bf := idx.Key.AsBigFloat()
			if !bf.IsInt() || bf.Sign() < 0 {
				return bad()
			}
			name = InstanceName(name, idx.Key)
		default:
			return bad()
		}
	}
	return name, true
}

// ParseServerAddr parses an address as commands take it (server.NAME,
// NAME, server.web["a"], web[0]) into the instance name; it does not check
// that the server exists.
func ParseServerAddr(s string) (string, error) {
	src := s
	if len(src) < 7 || src[:7] != "server." {
		src = "server." + src
	}
	expr, diags := hclsyntax.ParseExpression([]byte(src), "<address>", hcl.InitialPos)
	if diags.HasErrors() {
		return "", fmt.Errorf("%q is not a server address: write server.NAME or server.NAME[\"key\"]", s)
	}
	d := &decoder{cfg: &Config{}}
	name, ok := d.serverAddr(&hcl.Attribute{Expr: expr})
	if !ok {
		return "", fmt.Errorf("%q is not a server address: write server.NAME or server.NAME[\"key\"]", s)
	}
	return name, nil
}

// ParseMove parses a rename as roofline state mv takes it (SOURCE
// DESTINATION), to the instance names a moved block's from and to would
// hold: two server addresses (ParseServerAddr), not the same one.
func ParseMove(src, dst string) (from, to string, err error) {
	if from, err = ParseServerAddr(src); err != nil {
		return "", "", err
	}
	if to, err = ParseServerAddr(dst); err != nil {
		return "", "", err
	}
	if from == to {
		return "", "", fmt.Errorf("source and destination are both server.%s", from)
	}
	return from, to, nil
}
