package live

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/kube"
	"github.com/roofline/roofline/internal/textdiff"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// Action is what apply does to a server or one of its objects.
type Action string

// Actions. A server is replaced when its config hash changes: blue/green
// under create_before_destroy, destroy-first otherwise.
const (
	NoOp             Action = "no-op"
	Create           Action = "create"
	Update           Action = "update"
	Delete           Action = "delete"
	CreateThenDelete Action = "create-then-delete"
	DeleteThenCreate Action = "delete-then-create"
)

// Symbol is the action's marker, as in roofline's host plan.
func (a Action) Symbol() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Delete:
		return "-"
	case CreateThenDelete:
		return "+/-"
	case DeleteThenCreate:
		return "-/+"
	}
	return " "
}

// ObjectChange is one object's planned change.
type ObjectChange struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action Action `json:"action"`
	// Diff is the unified diff of the live object and the dry run's result
	// (server-side defaults included); for a create, the whole object.
	Diff string `json:"diff,omitempty"`
	// Patch is what apply sends (the rendered object); nil for a delete.
	Patch *unstructured.Unstructured `json:"-"`
	// Force takes fields back from hand edits (kubectl edit/patch/scale):
	// they are drift. Fields of any other manager are conflicts, never forced.
	Force bool `json:"force,omitempty"`
	// UID pins a delete to the object planned (a precondition).
	UID types.UID `json:"-"`
}

// ServerPlan is one cluster server's planned change.
type ServerPlan struct {
	Addr    string          `json:"address"`
	Name    string          `json:"name"` // object name
	Action  Action          `json:"action"`
	Reason  string          `json:"reason,omitempty"`
	Objects []*ObjectChange `json:"objects"`
	// Rendered is the desired server; nil when it is deleted.
	Rendered *kube.Rendered `json:"-"`
	// Old is the live generation a replacement retires (its workload name).
	Old      string `json:"old,omitempty"`
	ArgvDiff string `json:"argv_diff,omitempty"`
	Downtime string `json:"downtime,omitempty"`
}

// Drift is something changed on the cluster outside roofline.
type Drift struct {
	Addr    string `json:"address"`
	Summary string `json:"summary"`
	Detail  string `json:"detail,omitempty"`
}

// Plan is the plan of one cluster namespace.
type Plan struct {
	Cluster   string          `json:"cluster"`
	Namespace string          `json:"namespace"`
	Servers   []*ServerPlan   `json:"servers"`
	Drift     []*Drift        `json:"drift,omitempty"`
	Diags     hcl.Diagnostics `json:"-"`
}

// HasChanges reports whether apply would change anything.
func (p *Plan) HasChanges() bool {
	for _, s := range p.Servers {
		if s.Action != NoOp {
			return true
		}
	}
	return false
}

// Server returns the plan of the server with this address, or nil.
func (p *Plan) Server(addr string) *ServerPlan {
	for _, s := range p.Servers {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// liveServer is what the cluster holds of one server: its generations
// (workloads by config hash), their generation Services and its Service.
type liveServer struct {
	name      string
	addr      string
	workloads map[string]*unstructured.Unstructured // hash → workload
	previews  map[string]*unstructured.Unstructured // hash → generation Service
	service   *unstructured.Unstructured
}

// listLive reads every object roofline made in the namespace, by label.
func (c *Client) listLive(ctx context.Context, lws bool) (map[string]*liveServer, error) {
	out := map[string]*liveServer{}
	get := func(name string) *liveServer {
		ls := out[name]
		if ls == nil {
			ls = &liveServer{name: name, workloads: map[string]*unstructured.Unstructured{}, previews: map[string]*unstructured.Unstructured{}}
			out[name] = ls
		}
		return ls
	}
	kinds := []string{"Deployment", "Service"}
	if lws {
		kinds = append(kinds, "LeaderWorkerSet")
	}
	for _, kind := range kinds {
		list, err := c.Dynamic.Resource(gvrOf(kind)).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managedSelector("")})
		if err != nil {
			return nil, fmt.Errorf("listing %ss in namespace %s: %w", kind, c.Namespace, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if obj.GetDeletionTimestamp() != nil {
				continue // going away; its pods still count in the preflight
			}
			ls := get(obj.GetLabels()[kube.LabelServer])
			if a := obj.GetAnnotations()[kube.AnnotationAddr]; a != "" {
				ls.addr = a
			}
			hash := obj.GetLabels()[kube.LabelConfigHash]
			switch {
			case kind != "Service":
				ls.workloads[hash] = obj
			case hash != "":
				ls.previews[hash] = obj
			default:
				ls.service = obj
			}
		}
	}
	return out, nil
}

// Plan compares the rendered servers with the namespace. destroy plans to
// delete every server roofline made there. It never fails: problems are
// diagnostics.
func (c *Client) Plan(ctx context.Context, specs []kube.Spec, destroy bool, pf *Preflight) *Plan {
	p := &Plan{Cluster: c.Cluster, Namespace: c.Namespace}
	lws, err := c.lwsInstalled(ctx)
	if err != nil {
		p.errorf(nil, "Cluster unreachable", "cluster %q: %v. Check the kubeconfig, the context and the network; nothing was planned.", c.Cluster, err)
		return p
	}
	if _, err := c.Typed.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			p.errorf(nil, "Namespace not found", "cluster %q has no namespace %q. roofline does not create namespaces (their quotas and policies are the cluster's): kubectl create namespace %s.", c.Cluster, c.Namespace, c.Namespace)
		} else {
			p.errorf(nil, "Cluster unreachable", "cluster %q: %v.", c.Cluster, err)
		}
		return p
	}
	live, err := c.listLive(ctx, lws)
	if err != nil {
		p.errorf(nil, "Cluster unreachable", "cluster %q: %v.", c.Cluster, err)
		return p
	}
	if !destroy {
		c.observe(ctx, p, live)
	}
	desired := map[string]bool{}
	if !destroy {
		for _, spec := range specs {
			r, diags := kube.Render(spec)
			p.Diags = append(p.Diags, diags...)
			if r == nil {
				continue
			}
			desired[r.Name] = true
			if r.Nodes > 1 && !lws {
				rng := spec.Server.Range("nodes")
				p.errorf(&rng, "LeaderWorkerSet not installed",
					"Server %q spans %d nodes, which roofline runs as a LeaderWorkerSet, but cluster %q does not serve leaderworkerset.x-k8s.io/v1. Install LWS (https://lws.sigs.k8s.io) or set nodes = 1.", spec.Server.Name, r.Nodes, c.Cluster)
				continue
			}
			sp := c.planServer(ctx, p, spec, r, live[r.Name])
			p.Servers = append(p.Servers, sp)
		}
	}
	names := make([]string, 0, len(live))
	for name := range live {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !desired[name] {
			p.Servers = append(p.Servers, deletePlan(live[name]))
		}
	}
	if pf != nil && !destroy {
		pf.check(ctx, c, p, specs)
	}
	return p
}

func (p *Plan) errorf(rng *hcl.Range, summary, format string, args ...any) {
	p.Diags = append(p.Diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng})
}

func (p *Plan) warnf(rng *hcl.Range, summary, format string, args ...any) {
	p.Diags = append(p.Diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng})
}

func deletePlan(ls *liveServer) *ServerPlan {
	addr := ls.addr
	if addr == "" {
		addr = "server." + ls.name
	}
	sp := &ServerPlan{Addr: addr, Name: ls.name, Action: Delete, Reason: "not in the configuration"}
	for _, hash := range sortedKeys(ls.workloads) {
		sp.Objects = append(sp.Objects, deleteChange(ls.workloads[hash]))
	}
	for _, hash := range sortedKeys(ls.previews) {
		sp.Objects = append(sp.Objects, deleteChange(ls.previews[hash]))
	}
	if ls.service != nil {
		sp.Objects = append(sp.Objects, deleteChange(ls.service))
	}
	return sp
}

func deleteChange(obj *unstructured.Unstructured) *ObjectChange {
	return &ObjectChange{Kind: obj.GetKind(), Name: obj.GetName(), Action: Delete, UID: obj.GetUID(), Diff: diffYAML(obj, nil)}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// planServer plans one desired server against what the cluster holds of it.
func (c *Client) planServer(ctx context.Context, p *Plan, spec kube.Spec, r *kube.Rendered, ls *liveServer) *ServerPlan {
	sp := &ServerPlan{Addr: r.Addr, Name: r.Name, Rendered: r}
	if ls == nil {
		ls = &liveServer{workloads: map[string]*unstructured.Unstructured{}, previews: map[string]*unstructured.Unstructured{}}
	}
	cur := ls.workloads[r.Hash]
	// The objects of the desired generation, then the Service.
	for _, obj := range []*unstructured.Unstructured{r.Workload, r.Preview, r.Service} {
		var liveObj *unstructured.Unstructured
		switch obj {
		case r.Workload:
			liveObj = cur
		case r.Preview:
			liveObj = ls.previews[r.Hash]
		default:
			liveObj = ls.service
		}
		oc := c.dryRun(ctx, p, spec, obj, liveObj)
		sp.Objects = append(sp.Objects, oc)
	}
	// Older generations: retired by a replacement, or left by an
	// interrupted one.
	var old []string
	for _, hash := range sortedKeys(ls.workloads) {
		if hash != r.Hash {
			old = append(old, hash)
			sp.Objects = append(sp.Objects, deleteChange(ls.workloads[hash]))
		}
	}
	for _, hash := range sortedKeys(ls.previews) {
		if hash != r.Hash {
			sp.Objects = append(sp.Objects, deleteChange(ls.previews[hash]))
		}
	}
	changed := slices.ContainsFunc(sp.Objects, func(o *ObjectChange) bool { return o.Action != NoOp })
	switch {
	case cur == nil && len(old) == 0:
		sp.Action, sp.Reason = Create, "not on the cluster"
	case cur == nil:
		prev := ls.workloads[old[len(old)-1]]
		sp.Old = prev.GetName()
		sp.Reason = "the pod template changed (config hash " + old[len(old)-1] + " → " + r.Hash + ")"
		sp.ArgvDiff = argvDiff(prev, r.Workload)
		if spec.Server.Lifecycle.CreateBeforeDestroy {
			sp.Action = CreateThenDelete
		} else {
			sp.Action = DeleteThenCreate
			sp.Downtime = fmt.Sprintf("%s is deleted before %s starts: the server answers nothing until the new pods are ready (the engine's load time; the startup probe allows %s). create_before_destroy avoids it when the GPUs allow.",
				sp.Old, r.Workload.GetName(), r.StartupBudget)
		}
	case changed:
		sp.Action = Update
		if len(old) > 0 {
			sp.Old = ls.workloads[old[len(old)-1]].GetName()
			sp.Reason = "an interrupted rollout left older generations"
		} else {
			sp.Reason = "changed in place"
		}
	default:
		sp.Action = NoOp
	}
	return sp
}

// dryRun server-side-applies obj with dryRun=All (no force first) and
// diffs the result against the live object. Conflicts with hand edits are
// drift, taken back with force; with any other field manager they are
// errors, never overwritten.
func (c *Client) dryRun(ctx context.Context, p *Plan, spec kube.Spec, obj, liveObj *unstructured.Unstructured) *ObjectChange {
	oc := &ObjectChange{Kind: obj.GetKind(), Name: obj.GetName(), Patch: obj, Action: NoOp}
	if liveObj == nil {
		oc.Action = Create
	}
	res, err := c.apply(ctx, obj, true, false)
	if apierrors.IsConflict(err) {
		human, other := conflictManagers(err)
		rng := spec.Server.DeclRange
		if len(other) > 0 {
			p.errorf(&rng, "Field owned by another manager",
				"%s %s: %s. roofline does not overwrite fields another controller or tool owns. Stop setting them in the configuration, or hand them to roofline: kubectl apply --server-side --field-manager=roofline --force-conflicts.",
				oc.Kind, oc.Name, strings.Join(other, "; "))
		}
		if len(human) > 0 {
			p.Drift = append(p.Drift, &Drift{Addr: spec.Server.Addr(), Summary: oc.Kind + " " + oc.Name + " was edited by hand", Detail: strings.Join(human, "; ") + "; apply takes these fields back"})
			oc.Force = true
		}
		res, err = c.apply(ctx, obj, true, true)
	}
	if err != nil {
		rng := spec.Server.DeclRange
		p.errorf(&rng, "Rejected by the cluster", "%s %s: the API server's dry run refused it: %v.", oc.Kind, oc.Name, err)
		return oc
	}
	oc.Diff = diffYAML(liveObj, res)
	if liveObj != nil && oc.Diff != "" {
		oc.Action = Update
	}
	return oc
}

// apply is one server-side apply with roofline's field manager.
func (c *Client) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun, force bool) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: &force}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return c.Dynamic.Resource(gvrOf(obj.GetKind())).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
}

// conflictManagers splits an apply conflict's causes into hand edits
// (kubectl's managers) and other managers.
func conflictManagers(err error) (human, other []string) {
	var st apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s
	}
	if st == nil || st.Status().Details == nil {
		return nil, []string{err.Error()}
	}
	for _, cause := range st.Status().Details.Causes {
		line := cause.Field + " is owned by " + strings.TrimPrefix(cause.Message, "conflict with ")
		if strings.Contains(cause.Message, `"kubectl`) {
			human = append(human, line)
		} else {
			other = append(other, line)
		}
	}
	return human, other
}

// normalize strips what the server changes on every write, so that the
// diff shows what the configuration changes.
func normalize(obj *unstructured.Unstructured) map[string]any {
	if obj == nil {
		return nil
	}
	m := obj.DeepCopy().Object
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
			delete(md, k)
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, "deployment.kubernetes.io/revision")
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	return m
}

// diffYAML is the unified diff of two objects' normalized YAML.
func diffYAML(before, after *unstructured.Unstructured) string {
	text := func(o *unstructured.Unstructured) string {
		if o == nil {
			return ""
		}
		b, err := yaml.Marshal(normalize(o))
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	a, b := text(before), text(after)
	if a == b {
		return ""
	}
	return textdiff.Unified("live", "planned", a, b)
}

// leaderArgv is the command of a workload's leader (or only) container.
func leaderArgv(obj *unstructured.Unstructured) []string {
	path := []string{"spec", "template", "spec", "containers"}
	if obj.GetKind() == "LeaderWorkerSet" {
		path = []string{"spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "containers"}
	}
	ctrs, _, _ := unstructured.NestedSlice(obj.Object, path...)
	if len(ctrs) == 0 {
		return nil
	}
	ctr, _ := ctrs[0].(map[string]any)
	argv, _, _ := unstructured.NestedStringSlice(ctr, "command")
	return argv
}

func argvDiff(before, after *unstructured.Unstructured) string {
	return textdiff.Unified("argv (live)", "argv (planned)", strings.Join(leaderArgv(before), "\n")+"\n", strings.Join(leaderArgv(after), "\n")+"\n")
}
