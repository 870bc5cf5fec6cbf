package plan

import (
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/state"
)

// proxyLimitsChanged: the server's proxy runs with other limits than its
// proxy block says. The running proxy takes new ones from its limits file,
// so this is an update in place: neither the engine nor the proxy restarts.
func proxyLimitsChanged(before *state.Server, after *Desired) bool {
	return before.Proxy != nil && after.Proxy && !before.ProxyLimits.Equal(after.ProxyLimits)
}

// proxyLimitFields are the proxy block's attributes, each with its value in
// a ProxyLimits as the block writes it ("" when unset: the default).
func proxyLimitFields(l *state.ProxyLimits) [][2]string {
	var v state.ProxyLimits
	if l != nil {
		v = *l
	}
	size := func(n int64) string {
		if n == 0 {
			return ""
		}
		return config.SizeText(n)
	}
	dur := func(d interface{ String() string }, zero bool) string {
		if zero {
			return ""
		}
		return d.String()
	}
	conns := ""
	if v.MaxConnections > 0 {
		conns = fmt.Sprint(v.MaxConnections)
	}
	return [][2]string{
		{"max_body", size(v.MaxBody)},
		{"max_buffered", size(v.MaxBuffered)},
		{"max_connections", conns},
		{"header_timeout", dur(v.HeaderTimeout, v.HeaderTimeout == 0)},
		{"body_timeout", dur(v.BodyTimeout, v.BodyTimeout == 0)},
		{"idle_timeout", dur(v.IdleTimeout, v.IdleTimeout == 0)},
	}
}

// ProxyLimitsText lists the limits a proxy block sets ("max_body = 128MiB,
// idle_timeout = 30s"); the others are the proxy's defaults.
func ProxyLimitsText(l *state.ProxyLimits) string {
	var parts []string
	for _, f := range proxyLimitFields(l) {
		if f[1] != "" {
			parts = append(parts, f[0]+" = "+f[1])
		}
	}
	if len(parts) == 0 {
		return "(the defaults)"
	}
	return strings.Join(parts, ", ")
}

// ProxyLimitsDiff names the limits that differ, with both values.
func ProxyLimitsDiff(before, after *state.ProxyLimits) []string {
	b, a := proxyLimitFields(before), proxyLimitFields(after)
	var out []string
	for i := range b {
		if b[i][1] == a[i][1] {
			continue
		}
		from, to := b[i][1], a[i][1]
		if from == "" {
			from = "default"
		}
		if to == "" {
			to = "default"
		}
		out = append(out, fmt.Sprintf("%s %s -> %s", b[i][0], from, to))
	}
	return out
}
