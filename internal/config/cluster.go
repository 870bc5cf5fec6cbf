package config

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/suggest"
)

// Cluster is a Kubernetes cluster servers can run on (docs/kubernetes.md).
// A server with cluster = cluster.NAME is rendered into Kubernetes objects
// instead of being started on this host.
type Cluster struct {
	Name string
	// Kubeconfig is the kubeconfig file (absolute after loading); empty
	// means $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	Context    string // empty: the kubeconfig's current context
	Namespace  string // default "default"
	// GPUResource is the extended resource GPUs are requested as; default
	// "nvidia.com/gpu" (the device plugin's name).
	GPUResource  string
	NodeSelector map[string]string
	Tolerations  []Toleration
	// ShmSize caps the memory-backed /dev/shm volume ("16Gi"); empty: no cap.
	ShmSize string
	// ModelVolume is where the model folders are on the cluster; nil when
	// the block is absent (then no server may run on the cluster).
	ModelVolume *ModelVolume

	DeclRange hcl.Range
	Ranges    Ranges
}

// Addr is "cluster.NAME".
func (c *Cluster) Addr() string { return "cluster." + c.Name }

// Range returns the range of a cluster attribute, falling back to the block.
func (c *Cluster) Range(attr string) hcl.Range { return c.Ranges.Get(attr, c.DeclRange) }

// Toleration is a pod toleration, as Kubernetes spells it.
type Toleration struct {
	Key, Operator, Value, Effect string
}

// ModelVolume is the read-only volume the model folders come from. Exactly
// one of HostPath, Claim and Image is set.
type ModelVolume struct {
	HostPath string // a folder on every GPU node
	Claim    string // a PersistentVolumeClaim in the namespace
	Image    string // an OCI image volume, pinned by digest
	// MountPath is where the volume appears in the pod: model paths must lie
	// under it, and the engine is given the model's path unchanged. Default:
	// HostPath.
	MountPath string

	DeclRange hcl.Range
	Ranges    Ranges
}

// Kind says which source the volume is: "hostPath", "persistentVolumeClaim"
// or "image".
func (v *ModelVolume) Kind() string {
	switch {
	case v.Claim != "":
		return "persistentVolumeClaim"
	case v.Image != "":
		return "image"
	}
	return "hostPath"
}

// DefaultGPUResource is the NVIDIA device plugin's resource name.
const DefaultGPUResource = "nvidia.com/gpu"

// ClusterNames returns the cluster names sorted.
func (c *Config) ClusterNames() []string { return sortedKeys(c.Clusters) }

// OnCluster reports whether the server runs on a Kubernetes cluster.
func (s *Server) OnCluster() bool { return s.Cluster != "" }

// GPUsPerPod is how many GPUs each pod of a cluster server requests: its
// ranks (tensor × pipeline parallel) spread evenly over its nodes.
func (s *Server) GPUsPerPod() int {
	n := max(1, s.Nodes)
	return s.TensorParallel * s.PipelineParallel / n
}

var clusterSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kubeconfig"},
		{Name: "context"},
		{Name: "namespace"},
		{Name: "gpu_resource"},
		{Name: "node_selector"},
		{Name: "shm_size"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "toleration"}, {Type: "model_volume"}},
}

var tolerationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "key"}, {Name: "operator"}, {Name: "value"}, {Name: "effect"}},
}

var modelVolumeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "host_path"}, {Name: "claim"}, {Name: "image"}, {Name: "mount_path"}},
}

func (d *decoder) decodeCluster(blk *hcl.Block) *Cluster {
	c := &Cluster{Name: blk.Labels[0], DeclRange: blk.DefRange, Ranges: Ranges{}}
	content, ds := blk.Body.Content(clusterSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: c.Ranges}
	c.Kubeconfig = a.str("kubeconfig")
	if !strings.HasPrefix(c.Kubeconfig, "~/") { // ~ is expanded when the client is built
		c.Kubeconfig = d.absPath(c.Kubeconfig)
	}
	c.Context = a.str("context")
	c.Namespace = a.str("namespace")
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	c.GPUResource = a.str("gpu_resource")
	if c.GPUResource == "" {
		c.GPUResource = DefaultGPUResource
	}
	c.NodeSelector = a.strMap("node_selector")
	c.ShmSize = a.str("shm_size")
	for _, b := range content.Blocks {
		switch b.Type {
		case "toleration":
			tc, ds := b.Body.Content(tolerationSchema)
			d.add(ds)
			ta := attrs{d: d, m: tc.Attributes, ranges: Ranges{}}
			c.Tolerations = append(c.Tolerations, Toleration{Key: ta.str("key"), Operator: ta.str("operator"), Value: ta.str("value"), Effect: ta.str("effect")})
		case "model_volume":
			if c.ModelVolume != nil {
				d.errorf(b.DefRange, "Duplicate model_volume block", "Cluster %q already has a model_volume block at %s.", c.Name, c.ModelVolume.DeclRange)
				continue
			}
			v := &ModelVolume{DeclRange: b.DefRange, Ranges: Ranges{}}
			vc, ds := b.Body.Content(modelVolumeSchema)
			d.add(ds)
			va := attrs{d: d, m: vc.Attributes, ranges: v.Ranges}
			v.HostPath, v.Claim, v.Image, v.MountPath = va.str("host_path"), va.str("claim"), va.str("image"), va.str("mount_path")
			if v.MountPath == "" {
				v.MountPath = v.HostPath
			}
			c.ModelVolume = v
		}
	}
	return c
}

// decodeServerPlacement reads where a server runs: on this host (gpus) or
// on a cluster (cluster, nodes, replicas).
func (d *decoder) decodeServerPlacement(a attrs, s *Server) {
	s.Cluster = a.ref("cluster", "cluster")
	s.Nodes, s.Replicas = 1, 1
	if a.has("nodes") {
		s.Nodes = a.integer("nodes")
	}
	if a.has("replicas") {
		s.Replicas = a.integer("replicas")
	}
	switch {
	case a.has("cluster") && a.has("gpus"):
		d.errorf(s.Range("gpus"), "GPUs on a cluster server",
			"Server %q runs on a cluster, where the scheduler picks the GPUs: remove gpus. Each pod requests tensor_parallel × pipeline_parallel / nodes GPUs.", s.Name)
		s.GPUs = nil // one error, not its consequences
		delete(s.Ranges, "gpus")
	case !a.has("cluster") && !a.has("gpus"):
		d.errorf(s.DeclRange, "Missing required argument",
			"The argument \"gpus\" is required, but no definition was found. (A server on a Kubernetes cluster sets cluster = cluster.NAME instead.)")
	}
}

// objectName matches what a cluster server's name becomes in object names
// (a DNS label, leaving room for the config hash and LWS's suffixes).
var objectName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)

var namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ObjectName is the server's name as Kubernetes objects carry it:
// underscores become dashes.
func (s *Server) ObjectName() string { return strings.ReplaceAll(s.Name, "_", "-") }

func validateClusters(cfg *Config) hcl.Diagnostics {
	var ds diags
	errorf := ds.errorf
	for _, name := range cfg.ClusterNames() {
		c := cfg.Clusters[name]
		if c.Ranges.Has("namespace") && !namespaceName.MatchString(c.Namespace) {
			errorf(c.Range("namespace"), "Invalid namespace", "%q is not a Kubernetes namespace name: lower-case letters, digits and dashes.", c.Namespace)
		}
		for i, t := range c.Tolerations {
			switch t.Operator {
			case "", "Equal", "Exists":
			default:
				errorf(c.DeclRange, "Invalid toleration", "Toleration %d has operator %q; Kubernetes knows \"Equal\" and \"Exists\".", i+1, t.Operator)
			}
			switch t.Effect {
			case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
			default:
				errorf(c.DeclRange, "Invalid toleration", "Toleration %d has effect %q; Kubernetes knows NoSchedule, PreferNoSchedule and NoExecute.%s", i+1, t.Effect,
					suggest.DidYouMean(t.Effect, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}))
			}
		}
		if v := c.ModelVolume; v != nil {
			n := 0
			for _, set := range []bool{v.HostPath != "", v.Claim != "", v.Image != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				errorf(v.DeclRange, "Model volume needs one source",
					"model_volume needs exactly one of host_path (a folder on every GPU node), claim (a PersistentVolumeClaim) or image (an OCI image volume).")
			}
			if v.Image != "" && !digestRef.MatchString(v.Image) {
				errorf(v.Ranges.Get("image", v.DeclRange), "Image not pinned by digest", "The model image must be pinned by digest (repo@sha256:<64 hex digits>), like an engine image.")
			}
			switch {
			case v.MountPath == "" && n == 1:
				errorf(v.DeclRange, "Model volume needs mount_path", "Set mount_path: where the volume appears in the pod; model paths must lie under it.")
			case v.MountPath != "" && !filepath.IsAbs(v.MountPath):
				errorf(v.Ranges.Get("mount_path", v.DeclRange), "Relative mount_path", "mount_path must be an absolute path in the pod, such as \"/models\".")
			}
		}
	}
	seen := map[string]string{}
	for _, name := range cfg.ServerNames() {
		s := cfg.Servers[name]
		if !s.OnCluster() {
			for _, attr := range []string{"nodes", "replicas"} {
				if s.Ranges.Has(attr) {
					errorf(s.Range(attr), "Only on a cluster", "%s applies to servers on a Kubernetes cluster (cluster = cluster.NAME); on a host, a server is one engine process.", attr)
				}
			}
			continue
		}
		c, ok := cfg.Clusters[s.Cluster]
		if !ok {
			errorf(s.Range("cluster"), "Reference to undeclared cluster", "There is no cluster block named %q.%s", s.Cluster, suggest.DidYouMean(s.Cluster, cfg.ClusterNames()))
			continue
		}
		obj := s.ObjectName()
		if !objectName.MatchString(obj) {
			errorf(s.DeclRange, "Server name unusable on a cluster",
				"Server %q becomes Kubernetes object names (%q plus a hash): use lower-case letters, digits, dashes or underscores, starting with a letter, at most 40 characters.", s.Name, obj)
		} else if prev, dup := seen[c.Name+"/"+obj]; dup {
			errorf(s.DeclRange, "Server names collide on the cluster", "Servers %q and %q both become %q on cluster %q; rename one.", prev, s.Name, obj, c.Name)
		} else {
			seen[c.Name+"/"+obj] = s.Name
		}
		if s.Nodes < 1 {
			errorf(s.Range("nodes"), "Invalid nodes", "nodes must be 1 or more.")
		} else if tp, pp := s.TensorParallel, s.PipelineParallel; tp >= 1 && pp >= 1 && (tp*pp)%s.Nodes != 0 {
			errorf(s.Range("nodes"), "Ranks do not divide over the nodes",
				"tensor_parallel (%d) × pipeline_parallel (%d) = %d ranks cannot be spread evenly over %d nodes. The usual layout is tensor_parallel = GPUs per node and pipeline_parallel = nodes.", tp, pp, tp*pp, s.Nodes)
		}
		if s.Replicas < 1 {
			errorf(s.Range("replicas"), "Invalid replicas", "replicas must be 1 or more; to remove the server, delete its block.")
		}
		if e, ok := cfg.Engines[s.Engine]; ok && e.Image == "" {
			errorf(s.Range("engine"), "Cluster servers need an image engine",
				"Server %q runs on cluster %q, whose nodes run containers: engine %q must set image = \"repo@sha256:...\" (pinned by digest), not a local command or the rehearsal engine.", s.Name, c.Name, e.Name)
		}
		v := c.ModelVolume
		if v == nil {
			errorf(s.Range("cluster"), "Cluster has no model_volume", "Cluster %q needs a model_volume block saying where the model folders are on its nodes.", c.Name)
			continue
		}
		if m, ok := cfg.Models[s.Model]; ok && v.MountPath != "" && !within(m.Path, v.MountPath) {
			errorf(s.Range("model"), "Model outside the model volume",
				"Model %q is at %s, which is not under cluster %q's model volume mount_path %s: the engine in the pod is given the model's path, so the folder must lie inside the volume.", m.Name, m.Path, c.Name, v.MountPath)
		}
	}
	return ds.Diagnostics
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// HostOnly returns the configuration without its cluster servers, and
// without the engines and models only they use: what this host's plan,
// apply and status work on. Cluster servers are planned against their
// cluster (internal/kube). The result shares blocks with c.
func (c *Config) HostOnly() *Config {
	hasCluster := false
	for _, s := range c.Servers {
		hasCluster = hasCluster || s.OnCluster()
	}
	if !hasCluster {
		return c
	}
	h := *c
	h.Servers, h.Engines, h.Models = map[string]*Server{}, map[string]*Engine{}, map[string]*Model{}
	clusterOnlyEngine, clusterOnlyModel := map[string]bool{}, map[string]bool{}
	for name, s := range c.Servers {
		if s.OnCluster() {
			clusterOnlyEngine[s.Engine], clusterOnlyModel[s.Model] = true, true
			continue
		}
		h.Servers[name] = s
	}
	for _, s := range h.Servers {
		delete(clusterOnlyEngine, s.Engine)
		delete(clusterOnlyModel, s.Model)
	}
	for name, e := range c.Engines {
		if !clusterOnlyEngine[name] {
			h.Engines[name] = e
		}
	}
	for name, m := range c.Models {
		if !clusterOnlyModel[name] {
			h.Models[name] = m
		}
	}
	return &h
}

// ClusterServers returns the names of the servers on clusters, sorted.
func (c *Config) ClusterServers() []string {
	var out []string
	for _, name := range c.ServerNames() {
		if c.Servers[name].OnCluster() {
			out = append(out, name)
		}
	}
	return out
}
