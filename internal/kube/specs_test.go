package kube

import (
	"testing"

	"github.com/roofline/roofline/internal/config"
)

func TestSpecs(t *testing.T) {
	cfg := &config.Config{
		Clusters: map[string]*config.Cluster{"east": {Name: "east"}, "west": {Name: "west"}},
		Models:   map[string]*config.Model{"m": {Name: "m", ServedName: "served-m"}, "n": {Name: "n", ServedName: "served-n"}},
		Engines:  map[string]*config.Engine{"v": {Name: "v"}},
		Servers: map[string]*config.Server{
			"b":     {Name: "b", Cluster: "east", Model: "m", Engine: "v"},
			"a":     {Name: "a", Cluster: "east", Model: "n", Engine: "v"},
			"w":     {Name: "w", Cluster: "west", Model: "m", Engine: "v"},
			"local": {Name: "local", Model: "m", Engine: "v"},
		},
	}
	specs := Specs(cfg, "east")
	var names []string
	for _, s := range specs {
		names = append(names, s.Server.Name)
		if s.Cluster != cfg.Clusters["east"] || s.Engine != cfg.Engines["v"] || s.Model != cfg.Models[s.Server.Model] {
			t.Errorf("%s: blocks %+v", s.Server.Name, s)
		}
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Errorf("east servers = %v, want [a b]", names)
	}
	if got := ServedName(specs, "server.b"); got != "served-m" {
		t.Errorf("ServedName(server.b) = %q", got)
	}
	if got := ServedName(specs, "server.w"); got != "" {
		t.Errorf("ServedName of another cluster's server = %q", got)
	}
}
