package live

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/kube"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/vram"
	"github.com/roofline/roofline/internal/vram/fromodel"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPU Feature Discovery's node labels.
const (
	gfdProduct = "nvidia.com/gpu.product"
	gfdMemory  = "nvidia.com/gpu.memory" // MiB, NVML's total
	gfdCCMajor = "nvidia.com/gpu.compute.major"
	gfdCCMinor = "nvidia.com/gpu.compute.minor"
)

// Preflight is the GPU-aware check no dry run makes: whether the new pods
// can be placed, on which GPUs the VRAM fit runs, quotas, the model volume
// and the image.
type Preflight struct {
	// Inspect reads a model folder for the VRAM fit; nil skips the fit.
	Inspect func(dir string) (*model.Info, error)
}

// nodeGPUs is one schedulable node's GPU view.
type nodeGPUs struct {
	node        *corev1.Node
	allocatable int64
	free        int64
}

// inventory reads the nodes and the GPU requests of the pods bound to them.
// Pods of generations this plan deletes first (destroy-first replacements,
// deletions) are not counted when release says so.
func (c *Client) inventory(ctx context.Context, res string, release func(*corev1.Pod) bool) ([]*nodeGPUs, error) {
	nodes, err := c.Typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := c.Typed.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	used := map[string]int64{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || release(p) {
			continue
		}
		used[p.Spec.NodeName] += podGPUs(p, res)
	}
	var out []*nodeGPUs
	for i := range nodes.Items {
		n := &nodes.Items[i]
		q, ok := n.Status.Allocatable[corev1.ResourceName(res)]
		if !ok || q.Value() == 0 {
			continue
		}
		out = append(out, &nodeGPUs{node: n, allocatable: q.Value(), free: q.Value() - used[n.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Name < out[j].node.Name })
	return out, nil
}

// podGPUs is a pod's GPU request: the sum over its containers (requests,
// or limits, which extended resources default requests to).
func podGPUs(p *corev1.Pod, res string) int64 {
	var n int64
	for _, ctr := range p.Spec.Containers {
		if q, ok := ctr.Resources.Requests[corev1.ResourceName(res)]; ok {
			n += q.Value()
		} else if q, ok := ctr.Resources.Limits[corev1.ResourceName(res)]; ok {
			n += q.Value()
		}
	}
	return n
}

// eligible reports whether a pod of the cluster's servers may land on the
// node: Ready, schedulable, matching the node selector, its taints tolerated.
func eligible(n *corev1.Node, c *config.Cluster) bool {
	if n.Spec.Unschedulable {
		return false
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return false
	}
	for k, v := range c.NodeSelector {
		if n.Labels[k] != v {
			return false
		}
	}
	for _, taint := range n.Spec.Taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(c.Tolerations, func(t config.Toleration) bool {
			keyOK := t.Key == "" && t.Operator == "Exists" || t.Key == taint.Key
			valOK := t.Operator == "Exists" || t.Value == taint.Value
			effOK := t.Effect == "" || t.Effect == string(taint.Effect)
			return keyOK && valOK && effOK
		}) {
			return false
		}
	}
	return true
}

// check runs the preflight over the plan's servers, in plan order: each
// server's new pods take GPUs from what the earlier ones left.
func (pf *Preflight) check(ctx context.Context, c *Client, p *Plan, specs []kube.Spec) {
	bySpec := map[string]kube.Spec{}
	var cl *config.Cluster
	for _, s := range specs {
		bySpec[s.Server.Addr()] = s
		cl = s.Cluster
	}
	if cl == nil {
		return
	}
	// GPUs of pods whose generation is deleted before anything starts:
	// servers deleted and destroy-first replacements.
	freed := map[string]bool{} // server object name + "/" + hash
	for _, sp := range p.Servers {
		if sp.Action == Delete || sp.Action == DeleteThenCreate {
			for _, o := range sp.Objects {
				if o.Action == Delete && o.Kind != "Service" {
					freed[o.Name] = true
				}
			}
		}
	}
	release := func(pod *corev1.Pod) bool {
		l := pod.Labels
		return l[kube.LabelManagedBy] == kube.ManagedBy && pod.Namespace == c.Namespace &&
			freed[kube.WorkloadName(l[kube.LabelServer], l[kube.LabelConfigHash])]
	}
	nodes, err := c.inventory(ctx, cl.GPUResource, release)
	if err != nil {
		p.errorf(nil, "Cluster unreachable", "cluster %q: %v.", c.Cluster, err)
		return
	}
	var eligibleNodes []*nodeGPUs
	for _, n := range nodes {
		if eligible(n.node, cl) {
			eligibleNodes = append(eligibleNodes, n)
		}
	}
	quota := c.quotaLeft(ctx, p, cl.GPUResource)
	for _, sp := range p.Servers {
		spec, ok := bySpec[sp.Addr]
		if !ok || sp.Rendered == nil || sp.Action == NoOp && !sp.hasWorkloadUpdate() {
			continue
		}
		r := sp.Rendered
		rng := spec.Server.DeclRange
		pods := pf.newPods(sp)
		if len(eligibleNodes) == 0 {
			p.errorf(&rng, "No GPU nodes",
				"Cluster %q has no Ready, schedulable node with %s allocatable that matches the node selector and whose taints the tolerations allow (%d node(s) have %s at all). Is the NVIDIA device plugin (or GPU Operator) running?", c.Cluster, cl.GPUResource, len(nodes), cl.GPUResource)
			continue
		}
		pf.vramFit(p, spec, r, eligibleNodes)
		if pods == 0 {
			continue
		}
		placed := place(eligibleNodes, pods, int64(r.GPUsPerPod))
		if placed < pods {
			free, most := freeSummary(eligibleNodes)
			switch sp.Action {
			case CreateThenDelete:
				p.errorf(&rng, "Cannot surge: not enough free GPUs",
					"Server %q is replaced blue/green (create_before_destroy): the new generation needs %d pod(s) of %d GPU(s) while %s keeps its GPUs, but only %d of them fit (free GPUs: %s; at most %d on one node). Free GPUs, or remove create_before_destroy to replace it destroy-first, with downtime.",
					spec.Server.Name, pods, r.GPUsPerPod, sp.Old, placed, free, most)
			default:
				p.errorf(&rng, "Not enough free GPUs",
					"Server %q needs %d pod(s) of %d GPU(s) (%s), but only %d fit on the eligible nodes (free GPUs: %s; at most %d on one node). The pods would stay Pending.",
					spec.Server.Name, pods, r.GPUsPerPod, cl.GPUResource, placed, free, most)
			}
		}
		if quota != nil {
			need := int64(pods * r.GPUsPerPod)
			if need > quota.left {
				p.errorf(&rng, "GPU quota exceeded",
					"ResourceQuota %s in namespace %s leaves %d %s, and server %q needs %d more. Pods over quota are refused at creation.",
					quota.name, c.Namespace, quota.left, cl.GPUResource, spec.Server.Name, need)
			}
			quota.left -= need
		}
		pf.checkVolume(ctx, c, p, spec, r)
		checkImage(p, spec, eligibleNodes)
	}
}

func (sp *ServerPlan) hasWorkloadUpdate() bool {
	for _, o := range sp.Objects {
		if o.Kind != "Service" && o.Action == Update {
			return true
		}
	}
	return false
}

// newPods is how many pods the server's change starts: the whole new
// generation, or the replicas added to the current one.
func (pf *Preflight) newPods(sp *ServerPlan) int {
	r := sp.Rendered
	switch sp.Action {
	case Create, CreateThenDelete, DeleteThenCreate:
		return r.Replicas * r.Nodes
	}
	// An update in place: only added replicas need GPUs (a template change
	// is a new generation, never an update).
	for _, o := range sp.Objects {
		if o.Kind != "Service" && o.Action == Update {
			before := replicasIn(o.Diff, "-")
			if before >= 0 && r.Replicas > before {
				return (r.Replicas - before) * r.Nodes
			}
		}
	}
	return 0
}

// replicasIn finds "  replicas: N" on a diff line with the given sign.
func replicasIn(diff, sign string) int {
	for _, line := range strings.Split(diff, "\n") {
		if rest, ok := strings.CutPrefix(line, sign+"  replicas: "); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
				return n
			}
		}
	}
	return -1
}

// place puts pods of per GPUs each on the nodes, best fit first (the
// fullest node that still fits, as a bin-packing scheduler would), and
// takes their GPUs. It returns how many were placed.
func place(nodes []*nodeGPUs, pods int, per int64) int {
	placed := 0
	for range pods {
		var best *nodeGPUs
		for _, n := range nodes {
			if n.free >= per && (best == nil || n.free < best.free) {
				best = n
			}
		}
		if best == nil {
			break
		}
		best.free -= per
		placed++
	}
	return placed
}

func freeSummary(nodes []*nodeGPUs) (string, int64) {
	var parts []string
	var most int64
	total := int64(0)
	for _, n := range nodes {
		total += n.free
		most = max(most, n.free)
		if n.free > 0 && len(parts) < 8 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", n.node.Name, n.free, n.allocatable))
		}
	}
	if len(parts) == 0 {
		return "none", 0
	}
	return fmt.Sprintf("%d in all: %s", total, strings.Join(parts, ", ")), most
}

// quota is the tightest GPU quota of the namespace.
type quota struct {
	name string
	left int64
}

func (c *Client) quotaLeft(ctx context.Context, p *Plan, res string) *quota {
	list, err := c.Typed.CoreV1().ResourceQuotas(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		p.warnf(nil, "Quotas not read", "cluster %q: %v; the GPU quota is not checked.", c.Cluster, err)
		return nil
	}
	var out *quota
	for _, q := range list.Items {
		for _, key := range []string{"requests." + res, res} {
			hard, ok := q.Status.Hard[corev1.ResourceName(key)]
			if !ok {
				hard, ok = q.Spec.Hard[corev1.ResourceName(key)]
			}
			if !ok {
				continue
			}
			used := q.Status.Used[corev1.ResourceName(key)]
			left := hard.Value() - used.Value()
			if out == nil || left < out.left {
				out = &quota{name: q.Name, left: left}
			}
		}
	}
	return out
}

// vramFit runs the host's VRAM model on the GPU the nodes' GFD labels
// describe (the smallest, if they differ).
func (pf *Preflight) vramFit(p *Plan, spec kube.Spec, r *kube.Rendered, nodes []*nodeGPUs) {
	s := spec.Server
	rng := s.DeclRange
	var dev *gpu.GPU
	for _, n := range nodes {
		g, ok := gfdGPU(n.node)
		if ok && (dev == nil || g.MemoryTotalBytes < dev.MemoryTotalBytes) {
			dev = g
		}
	}
	if dev == nil {
		p.warnf(&rng, "GPU model unknown",
			"No eligible node of cluster %q has GPU Feature Discovery's %s and %s labels, so server %q's VRAM fit is not checked. Install GPU Feature Discovery (part of the GPU Operator).", p.Cluster, gfdProduct, gfdMemory, s.Name)
		return
	}
	if pf.Inspect == nil {
		return
	}
	info, err := pf.Inspect(spec.Model.Path)
	if err != nil {
		p.warnf(&rng, "Model not readable here",
			"Server %q: %v. The model folder is read where roofline runs to size the server; without it the VRAM fit on %s is skipped.", s.Name, err, dev.Name)
		return
	}
	ms, err := fromodel.Spec(info)
	if err != nil {
		p.warnf(&rng, "Cannot size the model", "Model %q: %v. The VRAM check is skipped for server %q.", s.Model, err, s.Name)
		return
	}
	version := spec.Engine.Version
	if spec.Installed != nil {
		version = spec.Installed.Version
	}
	res, err := vram.Estimate(vram.Input{
		Engine: spec.Engine.Kind, EngineVersion: version, Model: ms,
		GPUMemoryBytes: dev.CUDATotalBytes(), NVMLTotalBytes: dev.MemoryTotalBytes, GPUName: dev.Name, ComputeCapability: dev.ComputeCapability,
		TP: s.TensorParallel, PP: s.PipelineParallel, MaxModelLen: s.MaxModelLen, GPUMemoryUtilization: s.GPUMemoryUtilization,
		KVCacheDtype: s.KVCacheDtype, MaxNumSeqs: s.MaxNumSeqs, MaxNumBatchedTokens: s.MaxNumBatchedTokens,
		Concurrency: s.Concurrency, EnforceEager: s.EnforceEager,
	})
	if err != nil {
		p.errorf(&rng, "Cannot size the server", "Server %q: %v.", s.Name, err)
		return
	}
	if !res.Fits {
		p.errorf(&rng, "Model does not fit",
			"Server %q (%s on %d× %s per pod, TP %d × PP %d, GPU from the nodes' GFD labels): %s", s.Name, s.Model, r.GPUsPerPod, dev.Name, s.TensorParallel, s.PipelineParallel, res.ReasonText())
	}
}

// gfdGPU reads a node's GPU from GFD labels: the product name (GFD writes
// NVML's name with dashes for spaces) and the memory in MiB. A known
// product takes roofline's preset (with the driver's reservation).
func gfdGPU(n *corev1.Node) (*gpu.GPU, bool) {
	product, mem := n.Labels[gfdProduct], n.Labels[gfdMemory]
	mib, err := strconv.ParseUint(mem, 10, 64)
	if product == "" || err != nil || mib == 0 {
		return nil, false
	}
	if g, ok := gpu.Preset(product); ok && g.MemoryTotalBytes == mib<<20 {
		return &g, true
	}
	g := &gpu.GPU{Name: strings.ReplaceAll(product, "-", " "), MemoryTotalBytes: mib << 20}
	if maj, min := n.Labels[gfdCCMajor], n.Labels[gfdCCMinor]; maj != "" && min != "" {
		g.ComputeCapability = maj + "." + min
	}
	return g, true
}

// checkVolume: a claim must exist, be bound, be big enough for the model
// and be readable from several nodes when several pods read it.
func (pf *Preflight) checkVolume(ctx context.Context, c *Client, p *Plan, spec kube.Spec, r *kube.Rendered) {
	v := spec.Cluster.ModelVolume
	if v == nil || v.Kind() != "persistentVolumeClaim" {
		return
	}
	rng := spec.Server.DeclRange
	pvc, err := c.Typed.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, v.Claim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		p.errorf(&rng, "Model volume claim not found", "Cluster %q's model_volume claim %q does not exist in namespace %s; the pods would stay Pending.", c.Cluster, v.Claim, c.Namespace)
		return
	} else if err != nil {
		p.warnf(&rng, "Model volume claim not read", "%v.", err)
		return
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		p.errorf(&rng, "Model volume claim not bound", "PersistentVolumeClaim %s is %s, not Bound.", v.Claim, pvc.Status.Phase)
	}
	if r.Replicas*r.Nodes > 1 && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadOnlyMany) {
		p.errorf(&rng, "Model volume not shareable",
			"Server %q runs %d pods that all read claim %s, whose access modes %v allow one node only. Use a ReadWriteMany or ReadOnlyMany volume.", spec.Server.Name, r.Replicas*r.Nodes, v.Claim, pvc.Spec.AccessModes)
	}
	if capQ, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		if pf.Inspect != nil {
			if info, err := pf.Inspect(spec.Model.Path); err == nil && info.TotalBytes > capQ.Value() {
				p.errorf(&rng, "Model volume too small", "Claim %s holds %s, less than model %q's %s.", v.Claim, capQ.String(), spec.Model.Name, resource.NewQuantity(info.TotalBytes, resource.BinarySI).String())
			}
		}
	}
}

// checkImage: the node status lists the images a node holds (at most 50 by
// default), so absence there is only a hint.
func checkImage(p *Plan, spec kube.Spec, nodes []*nodeGPUs) {
	img := spec.Engine.Image
	for _, n := range nodes {
		for _, ci := range n.node.Status.Images {
			if slices.Contains(ci.Names, img) {
				return
			}
		}
	}
	rng := spec.Engine.Range("image")
	p.Diags = append(p.Diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Image not seen on the GPU nodes",
		Detail:  fmt.Sprintf("No eligible node of cluster %q lists %s in its status. This is best effort (a node lists at most 50 images), but on an air-gapped cluster the pods would fail to pull it: load it on the nodes first.", p.Cluster, img),
		Subject: &rng})
}
