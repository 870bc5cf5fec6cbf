package kube

import "github.com/roofline/roofline/internal/config"

// Specs are the servers of cfg that run on cluster, in the configuration's
// order, with their blocks.
func Specs(cfg *config.Config, cluster string) []Spec {
	var specs []Spec
	for _, name := range cfg.ClusterServers() {
		s := cfg.Servers[name]
		if s.Cluster == cluster {
			specs = append(specs, Spec{Server: s, Model: cfg.Models[s.Model], Engine: cfg.Engines[s.Engine], Cluster: cfg.Clusters[cluster]})
		}
	}
	return specs
}

// ServedName is the served model name of the server at addr among specs;
// "" when none is there.
func ServedName(specs []Spec, addr string) string {
	name := ""
	for _, s := range specs {
		if s.Server.Addr() == addr {
			name = s.Model.ServedName
		}
	}
	return name
}
