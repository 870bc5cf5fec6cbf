package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var proxySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "max_body"},
		{Name: "max_buffered"},
		{Name: "max_connections"},
		{Name: "header_timeout"},
		{Name: "body_timeout"},
		{Name: "idle_timeout"},
	},
}

// decodeProxy reads a server's proxy block: the limits of roofline's proxy.
func (d *decoder) decodeProxy(blk *hcl.Block) *ProxyLimits {
	p := &ProxyLimits{DeclRange: blk.DefRange, Ranges: Ranges{}}
	content, ds := blk.Body.Content(proxySchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: p.Ranges}
	p.MaxBody = a.size("max_body", 1<<10, 16<<30)
	p.MaxBuffered = a.size("max_buffered", 1<<10, 1<<40)
	if a.has("max_connections") {
		p.MaxConnections = a.integer("max_connections")
		if r, ok := a.ranges["max_connections"]; ok && (p.MaxConnections < 1 || p.MaxConnections > 1_000_000) {
			d.errorf(r, "Invalid max_connections", "max_connections must be between 1 and 1000000: the client connections roofline's proxy keeps open at once (more wait in the listen queue).")
			p.MaxConnections = 0
		}
	}
	for _, t := range []struct {
		name string
		dst  *time.Duration
		what string
	}{
		{"header_timeout", &p.HeaderTimeout, "how long a client may take to send a request's headers"},
		{"body_timeout", &p.BodyTimeout, "how long a client may take to send a request's body (408 after it)"},
		{"idle_timeout", &p.IdleTimeout, "how long a keep-alive connection may stay idle between requests"},
	} {
		if v, ok := a.duration(t.name); ok {
			if v <= 0 {
				d.errorf(a.ranges[t.name], "Invalid "+t.name, "%s must be a positive duration: %s.", t.name, t.what)
				continue
			}
			*t.dst = v
		}
	}
	if p.MaxBody > 0 && p.MaxBuffered > 0 && p.MaxBuffered < p.MaxBody {
		d.errorf(a.ranges["max_buffered"], "max_buffered below max_body",
			"max_buffered (%s) is below max_body (%s): a request body of the largest allowed size could never be buffered, and would always get 503. Raise max_buffered, or lower max_body.", SizeText(p.MaxBuffered), SizeText(p.MaxBody))
	}
	return p
}

// size reads a byte size: a whole number of bytes, or a string with a unit
// ("64MiB", "1GiB", "500KB"), between lo and hi.
func (a attrs) size(name string, lo, hi int64) int64 {
	attr, ok := a.m[name]
	if !ok {
		return 0
	}
	v, ds := attr.Expr.Value(a.d.ctx)
	v, _ = v.UnmarkDeep()
	if ds.HasErrors() || !v.IsKnown() || v.IsNull() || (v.Type() != cty.String && v.Type() != cty.Number) {
		a.value(name, cty.String, `a size such as "64MiB"`) // reports the problem
		return 0
	}
	a.ranges[name] = attr.Expr.Range()
	var n int64
	var err error
	if v.Type() == cty.Number {
		bf := v.AsBigFloat()
		n, _ = bf.Int64()
		if !bf.IsInt() {
			err = fmt.Errorf("%s is not a whole number of bytes", bf.Text('g', -1))
		}
	} else {
		n, err = ParseSize(v.AsString())
	}
	if err == nil && (n < lo || n > hi) {
		err = fmt.Errorf("%s is outside %s to %s", SizeText(n), SizeText(lo), SizeText(hi))
	}
	if err != nil {
		a.d.errorf(attr.Expr.Range(), "Invalid "+name, "%v. Write a size with a unit, such as \"64MiB\" or \"1GiB\" (KiB, MiB, GiB are powers of 1024; KB, MB, GB of 1000), or a number of bytes.", err)
		delete(a.ranges, name)
		return 0
	}
	return n
}

// ParseSize parses "64MiB", "1.5GiB", "500KB", "1048576" or "1048576B".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			mult, t = u.mult, strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != f || f < 0 || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return int64(f * mult), nil
}

// SizeText writes a byte count the way the proxy block reads it.
func SizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
