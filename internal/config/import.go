package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Import is an import block: take over a server that runs already (started
// by hand, by systemd) instead of starting a new one. plan shows
// "will be imported" and every difference that would force a restart.
type Import struct {
	To        string // instance name
	ID        ImportID
	DeclRange hcl.Range
	IDRange   hcl.Range
}

// ImportID says how to find the process: by pid or by the port it listens
// on.
type ImportID struct {
	PID  int
	Port int
}

func (id ImportID) String() string {
	if id.PID > 0 {
		return fmt.Sprintf("pid:%d", id.PID)
	}
	return fmt.Sprintf("port:%d", id.Port)
}

var importSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "to", Required: true}, {Name: "id", Required: true}},
}

// ParseImportID reads "pid:1234" or "port:8000".
func ParseImportID(s string) (ImportID, error) {
	kind, val, ok := strings.Cut(strings.TrimSpace(s), ":")
	n, err := strconv.Atoi(val)
	switch {
	case !ok || err != nil || n < 1:
	case kind == "pid":
		return ImportID{PID: n}, nil
	case kind == "port" && n <= 65535:
		return ImportID{Port: n}, nil
	case kind == "container":
		return ImportID{}, fmt.Errorf("%q: importing a container is not supported yet; import the process by pid or port, or restart it with roofline", s)
	}
	return ImportID{}, fmt.Errorf("%q is not an import id: write \"pid:1234\" or \"port:8000\"", s)
}

func (d *decoder) decodeImports(blocks []*hcl.Block) {
	seen := map[string]hcl.Range{}
	for _, blk := range blocks {
		content, ds := blk.Body.Content(importSchema)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		to, ok := d.serverAddr(content.Attributes["to"])
		if !ok {
			continue
		}
		toRng := content.Attributes["to"].Expr.Range()
		idAttr := content.Attributes["id"]
		v, ds := idAttr.Expr.Value(d.ctx)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		v, _ = v.Unmark()
		if !v.IsKnown() {
			continue
		}
		if v.IsNull() || v.Type() != cty.String {
			d.errorf(idAttr.Expr.Range(), "Invalid import id", "id is a string: \"pid:1234\" or \"port:8000\".")
			continue
		}
		id, err := ParseImportID(v.AsString())
		if err != nil {
			d.errorf(idAttr.Expr.Range(), "Invalid import id", "%v.", err)
			continue
		}
		if d.cfg.Servers[to] == nil {
			d.errorf(toRng, "Import to a server not in the configuration",
				"There is no server.%s to import into. Declare it (roofline import -generate-config-out=FILE server.%s %s writes one from the running process).", to, to, id)
			continue
		}
		if prev, dup := seen[to]; dup {
			d.errorf(toRng, "Duplicate import", "server.%s is already imported by the block at %s.", to, prev)
			continue
		}
		seen[to] = blk.DefRange
		d.cfg.Imports = append(d.cfg.Imports, &Import{To: to, ID: id, DeclRange: blk.DefRange, IDRange: idAttr.Expr.Range()})
	}
}
