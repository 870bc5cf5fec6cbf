package config

import (
	"net"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Output is an output block: a value handed to other tools (a gateway's
// routing table, a client's base URL) with `roofline output`.
type Output struct {
	Name        string
	Description string
	// Sensitive outputs are masked when all outputs are listed; a value
	// that derives from a sensitive variable must be declared sensitive.
	Sensitive bool
	Value     cty.Value // unmarked; cty.NilVal when it did not evaluate
	DeclRange hcl.Range
}

var outputSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "value", Required: true}, {Name: "description"}, {Name: "sensitive"}},
}

// OutputNames returns the output names sorted.
func (c *Config) OutputNames() []string { return sortedKeys(c.Outputs) }

// Endpoint is what a client needs to reach a server: the attributes of
// server.NAME in expressions. The API key itself is never here, only where
// it is set.
type Endpoint struct {
	Address         string // server.NAME
	Host            string // the host clients use: the bind host, or 127.0.0.1 for an unset or wildcard one
	Port            int
	URL             string // http://HOST:PORT
	BaseURL         string // URL + "/v1", what OpenAI clients take as base_url
	ServedModelName string
	// APIKeyEnv is the environment variable of the server that holds its
	// API key (VLLM_API_KEY), "" when none is set there; APIKeyRequired is
	// true when the server demands a key (api_key, api_key_file, that
	// variable, or --api-key in extra_args).
	APIKeyEnv      string
	APIKeyRequired bool
	// APIKeyFile is the server's api_key_file (where clients can read the
	// key too), "" when none.
	APIKeyFile string
}

// Endpoint returns the server's client-facing endpoint.
func (c *Config) Endpoint(s *Server) Endpoint {
	host := s.Host
	if ip := net.ParseIP(host); host == "" || host == "localhost" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	hostport := net.JoinHostPort(host, strconv.Itoa(s.Port))
	ep := Endpoint{Address: s.Addr(), Host: host, Port: s.Port, URL: "http://" + hostport, BaseURL: "http://" + hostport + "/v1"}
	if m, ok := c.Models[s.Model]; ok {
		ep.ServedModelName = m.ServedName
	}
	if _, ok := s.Env["VLLM_API_KEY"]; ok {
		ep.APIKeyEnv, ep.APIKeyRequired = "VLLM_API_KEY", true
	}
	if s.APIKey != "" || s.APIKeyFile != "" || s.Unknown["api_key"] {
		ep.APIKeyRequired = true
	}
	ep.APIKeyFile = s.APIKeyFile
	for _, a := range s.ExtraArgs {
		if a == "--api-key" || len(a) > 10 && a[:10] == "--api-key=" {
			ep.APIKeyRequired = true
		}
	}
	return ep
}

func (ep Endpoint) value() cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"address":           cty.StringVal(ep.Address),
		"host":              cty.StringVal(ep.Host),
		"port":              cty.NumberIntVal(int64(ep.Port)),
		"url":               cty.StringVal(ep.URL),
		"base_url":          cty.StringVal(ep.BaseURL),
		"served_model_name": cty.StringVal(ep.ServedModelName),
		"api_key_env":       cty.StringVal(ep.APIKeyEnv),
		"api_key_required":  cty.BoolVal(ep.APIKeyRequired),
		"api_key_file":      cty.StringVal(ep.APIKeyFile),
	})
}

// decodeOutputs evaluates the output blocks, in a context where each
// server is its Endpoint (server.qwen3.base_url).
func (d *decoder) decodeOutputs(blocks []*hcl.Block, servers map[string][]refEntry, reps map[string]repetition) {
	d.cfg.Outputs = map[string]*Output{}
	if len(blocks) == 0 {
		return
	}
	ctx := d.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"server": refObjects("server", servers, reps)}
	for _, blk := range blocks {
		o := &Output{Name: blk.Labels[0], DeclRange: blk.DefRange}
		d.cfg.Outputs[o.Name] = o
		content, ds := blk.Body.Content(outputSchema)
		d.add(ds)
		a := attrs{d: d, m: content.Attributes, ranges: Ranges{}}
		o.Description = a.str("description")
		o.Sensitive = a.boolean("sensitive")
		attr, ok := content.Attributes["value"]
		if !ok {
			continue
		}
		v, ds := attr.Expr.Value(ctx)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		if v.ContainsMarked() && !o.Sensitive {
			if _, pvm := v.UnmarkDeepWithPaths(); hasSensitive(pvm) {
				d.errorf(attr.Expr.Range(), "Output refers to sensitive values",
					"The value of output %q derives from a sensitive variable. Set sensitive = true in the output block, so that listings mask it.", o.Name)
				continue
			}
		}
		v, _ = v.UnmarkDeep()
		if !v.IsWhollyKnown() {
			continue // a variable without a value (validate)
		}
		o.Value = v
	}
}

func hasSensitive(pvm []cty.PathValueMarks) bool {
	for _, pm := range pvm {
		if _, ok := pm.Marks[SensitiveMark]; ok {
			return true
		}
	}
	return false
}

// serverRef is the reference entry of a server instance for outputs.
func (d *decoder) serverRef(s *Server) refEntry {
	v := d.cfg.Endpoint(s).value()
	if s.Sensitive.Attr("port") || s.Sensitive.Attr("host") {
		v = v.Mark(SensitiveMark)
	}
	return refEntry{key: eachKey(s.Key), val: v}
}
