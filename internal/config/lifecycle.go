package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/version"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Trigger is one element of replace_triggered_by: another server (this one
// is replaced whenever that one is created or replaced) or a file (its
// content is part of the server's configuration hash, such as a chat
// template the engine reads at start).
type Trigger struct {
	Server string // instance name, or ""
	File   string // absolute path, or ""
	Range  hcl.Range
}

// IgnoreModelFiles and IgnoreEngineInstall are the ignore_changes names of
// what is not an attribute: the model folder's fingerprint and the engine
// install's identity.
const (
	IgnoreModelFiles    = "model_files"
	IgnoreEngineInstall = "engine_install"
)

var lifecycleExtraSchema = []hcl.AttributeSchema{{Name: "prevent_destroy"}, {Name: "ignore_changes"}, {Name: "replace_triggered_by"}}

var preconditionSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

// Ignores reports whether ignore_changes covers a replace path as plan
// names them: "max_model_len", "env", "model files", "engine install",
// "extra_args --flag".
func (l Lifecycle) Ignores(path string) bool {
	if l.IgnoreAll {
		return true
	}
	for _, n := range l.IgnoreChanges {
		switch {
		case n == path, n == IgnoreModelFiles && path == "model files", n == IgnoreEngineInstall && path == "engine install",
			n == "extra_args" && strings.HasPrefix(path, "extra_args "):
			return true
		}
	}
	return false
}

// decodeLifecycleExtras reads prevent_destroy, ignore_changes,
// replace_triggered_by and precondition blocks of a server's lifecycle.
func (d *decoder) decodeLifecycleExtras(s *Server, a attrs, blocks hcl.Blocks) {
	l := &s.Lifecycle
	l.PreventDestroy = a.boolean("prevent_destroy")
	if attr, ok := a.m["ignore_changes"]; ok {
		d.ignoreChanges(l, attr)
	}
	if attr, ok := a.m["replace_triggered_by"]; ok {
		d.triggers(s, attr)
	}
	for _, b := range blocks {
		d.precondition(s, b)
	}
}

func (d *decoder) ignoreChanges(l *Lifecycle, attr *hcl.Attribute) {
	if kw := hcl.ExprAsKeyword(attr.Expr); kw == "all" {
		l.IgnoreAll = true
		return
	}
	exprs, ds := hcl.ExprList(attr.Expr)
	if ds.HasErrors() {
		d.errorf(attr.Expr.Range(), "Invalid ignore_changes", "ignore_changes is a list of attribute names, such as [max_model_len, env, model_files], or all.")
		return
	}
	known := []string{IgnoreModelFiles, IgnoreEngineInstall}
	for _, as := range serverSchema.Attributes {
		known = append(known, as.Name)
	}
	for _, e := range exprs {
		name := hcl.ExprAsKeyword(e)
		if name == "" {
			if v, ds := e.Value(nil); !ds.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
				name = v.AsString()
			}
		}
		ok := false
		for _, k := range known {
			ok = ok || k == name
		}
		if !ok {
			d.errorf(e.Range(), "Invalid ignore_changes", "%q is not a server attribute.%s ignore_changes takes attribute names, model_files (the model folder's fingerprint) and engine_install.",
				name, suggest.DidYouMean(name, known))
			continue
		}
		l.IgnoreChanges = append(l.IgnoreChanges, name)
	}
}

func (d *decoder) triggers(s *Server, attr *hcl.Attribute) {
	exprs, ds := hcl.ExprList(attr.Expr)
	if ds.HasErrors() {
		d.errorf(attr.Expr.Range(), "Invalid replace_triggered_by", "replace_triggered_by is a list of servers (server.NAME) and files (\"templates/chat.jinja\").")
		return
	}
	for _, e := range exprs {
		if trav, ds := hcl.AbsTraversalForExpr(e); !ds.HasErrors() && trav.RootName() == "server" {
			name, ok := d.serverAddr(&hcl.Attribute{Expr: e})
			if ok {
				s.Lifecycle.ReplaceTriggeredBy = append(s.Lifecycle.ReplaceTriggeredBy, Trigger{Server: name, Range: e.Range()})
			}
			continue
		}
		v, ds := e.Value(d.ctx)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		v, _ = v.Unmark()
		if !v.IsKnown() {
			continue
		}
		if v.IsNull() || v.Type() != cty.String || v.AsString() == "" {
			d.errorf(e.Range(), "Invalid replace_triggered_by", "Each element is a server (server.NAME, without quotes) or a file path (a string).")
			continue
		}
		s.Lifecycle.ReplaceTriggeredBy = append(s.Lifecycle.ReplaceTriggeredBy, Trigger{File: d.absPath(filepath.Clean(v.AsString())), Range: e.Range()})
	}
}

func (d *decoder) precondition(s *Server, b *hcl.Block) {
	content, ds := b.Body.Content(preconditionSchema)
	d.add(ds)
	if ds.HasErrors() {
		return
	}
	cond := content.Attributes["condition"]
	v, ds := cond.Expr.Value(d.ctx)
	d.add(ds)
	if ds.HasErrors() {
		return
	}
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() {
		return
	}
	if v, err := convert.Convert(v, cty.Bool); err != nil || v.IsNull() {
		d.errorf(cond.Expr.Range(), "Invalid precondition result", "The condition must be true or false.")
		return
	} else if v.True() {
		return
	}
	msg := "The precondition is not met."
	if m, ds := content.Attributes["error_message"].Expr.Value(d.ctx); !ds.HasErrors() {
		if m, _ = m.Unmark(); m.Type() == cty.String && m.IsKnown() && !m.IsNull() {
			msg = m.AsString()
		}
	}
	d.errorf(cond.Expr.Range(), "Resource precondition failed", "%s\n\nThis was checked by the precondition of %s at %s.", msg, s.Addr(), b.DefRange)
}

// checkRequiredVersion checks roofline { required_version = ">= 0.1" }
// against this roofline. A development build (0.1.0-dev) counts as its base
// version.
func (d *decoder) checkRequiredVersion(r *Roofline, a attrs) {
	c := a.str("required_version")
	if c == "" {
		return
	}
	r.RequiredVersion = c
	ok, err := VersionMeets(version.Version, c)
	switch {
	case err != nil:
		d.errorf(r.Ranges.Get("required_version", r.DeclRange), "Invalid required_version", "%v. Write constraints such as \">= 0.1.0\", \"~> 0.1\" or \">= 0.1, < 0.3\".", err)
	case !ok:
		d.errorf(r.Ranges.Get("required_version", r.DeclRange), "Unsupported roofline version",
			"This configuration requires roofline %s; this is roofline %s. Install a matching roofline, or change required_version.", c, version.Version)
	}
}

// VersionMeets reports whether version v meets every comma-separated
// constraint of c: =, !=, >, >=, <, <=, ~> (Terraform's operators).
func VersionMeets(v, c string) (bool, error) {
	have, err := parseVersion(v)
	if err != nil {
		return false, fmt.Errorf("this roofline's version %q: %v", v, err)
	}
	for _, part := range strings.Split(c, ",") {
		part = strings.TrimSpace(part)
		op := "="
		for _, o := range []string{"~>", ">=", "<=", "!=", ">", "<", "="} {
			if strings.HasPrefix(part, o) {
				op, part = o, strings.TrimSpace(part[len(o):])
				break
			}
		}
		want, err := parseVersion(part)
		if err != nil {
			return false, fmt.Errorf("%q is not a version", part)
		}
		cmp := compareVersions(have, want.nums)
		var ok bool
		switch op {
		case "=":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		case ">":
			ok = cmp > 0
		case ">=":
			ok = cmp >= 0
		case "<":
			ok = cmp < 0
		case "<=":
			ok = cmp <= 0
		case "~>":
			// ~> 0.1.2 is >= 0.1.2 and < 0.2; ~> 0.1 is >= 0.1 and < 1.0.
			upper := append([]int(nil), want.nums[:max(1, want.given-1)]...)
			upper[len(upper)-1]++
			ok = cmp >= 0 && compareVersions(have, upper) < 0
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

type parsedVersion struct {
	nums  []int // major, minor, patch
	given int   // how many were written
}

func parseVersion(s string) (parsedVersion, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i] // pre-release and build: a dev build counts as its base
	}
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 3 {
		return parsedVersion{}, fmt.Errorf("not a version")
	}
	out := parsedVersion{nums: make([]int, 3), given: len(parts)}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return parsedVersion{}, fmt.Errorf("not a version")
		}
		out.nums[i] = n
	}
	return out, nil
}

func compareVersions(a parsedVersion, b []int) int {
	for i := 0; i < 3; i++ {
		bi := 0
		if i < len(b) {
			bi = b[i]
		}
		switch {
		case a.nums[i] < bi:
			return -1
		case a.nums[i] > bi:
			return 1
		}
	}
	return 0
}
