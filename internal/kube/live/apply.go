package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/roofline/roofline/internal/kube"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resolver finds the address the gates reach a Service at. On a real
// cluster that is a port-forward or the cluster network; tests resolve to
// a local rehearsal engine (docs/kubernetes.md), because kwok's pods serve
// nothing.
type Resolver interface {
	Resolve(ctx context.Context, svc *corev1.Service) (baseURL string, stop func(), err error)
}

// GateFunc runs a server's gates (health, smoke, bench) against baseURL.
type GateFunc func(ctx context.Context, addr, baseURL string) error

// Applier carries out a cluster plan.
type Applier struct {
	Client *Client
	// Gate runs the gates through the generation's Service; nil skips
	// them (the readiness probe is then the only check).
	Gate    GateFunc
	Resolve Resolver
	// Progress receives one line per step and status change.
	Progress func(format string, args ...any)
	// Poll is how often the rollout is read; default 2 s.
	Poll time.Duration
	// Timeout caps the wait for one rollout on top of the startup probe's
	// budget; default 2 minutes.
	Timeout time.Duration
}

func (a *Applier) say(format string, args ...any) {
	if a.Progress != nil {
		a.Progress(format, args...)
	}
}

// Apply carries out every server's change in plan order. A server that
// fails leaves the others to go on; the error lists what failed and what
// still serves.
func (a *Applier) Apply(ctx context.Context, p *Plan) error {
	var errs []error
	for _, sp := range p.Servers {
		if sp.Action == NoOp {
			continue
		}
		if err := a.applyServer(ctx, sp); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sp.Addr, err))
		}
	}
	return errors.Join(errs...)
}

func (a *Applier) applyServer(ctx context.Context, sp *ServerPlan) error {
	c := a.Client
	if sp.Action == Delete {
		a.say("%s: deleting", sp.Addr)
		return a.deleteObjects(ctx, sp.Objects, false)
	}
	r := sp.Rendered
	var workload, preview, service *ObjectChange
	var retire []*ObjectChange
	for _, o := range sp.Objects {
		switch {
		case o.Action == Delete:
			retire = append(retire, o)
		case o.Kind == "Service" && o.Name == r.Name:
			service = o
		case o.Kind == "Service":
			preview = o
		default:
			workload = o
		}
	}
	if sp.Action == DeleteThenCreate {
		a.say("%s: deleting %s first (destroy-first replacement: the server is down until the new generation is ready)", sp.Addr, sp.Old)
		if err := a.deleteObjects(ctx, retire, true); err != nil {
			return fmt.Errorf("deleting the old generation: %w; the Service %s still selects it", err, r.Name)
		}
		retire = nil
	}
	newGeneration := workload.Action == Create
	for _, o := range []*ObjectChange{workload, preview} {
		if o.Action == NoOp {
			continue
		}
		a.say("%s: %s %s %s", sp.Addr, verb(o.Action), o.Kind, o.Name)
		if _, err := c.apply(ctx, o.Patch, false, o.Force); err != nil {
			if newGeneration {
				a.cleanup(ctx, sp, workload, preview)
			}
			return fmt.Errorf("applying %s %s: %w%s", o.Kind, o.Name, err, a.stillServes(sp))
		}
	}
	if workload.Action != NoOp || newGeneration {
		if err := a.waitReady(ctx, sp, r); err != nil {
			if newGeneration {
				a.cleanup(ctx, sp, workload, preview)
			}
			return fmt.Errorf("%w%s", err, a.stillServes(sp))
		}
	}
	if newGeneration && a.Gate != nil {
		if err := a.gate(ctx, sp, r.Preview.GetName()); err != nil {
			a.cleanup(ctx, sp, workload, preview)
			return fmt.Errorf("gate failed: %w; deleted %s%s", err, r.Workload.GetName(), a.stillServes(sp))
		}
	}
	if service.Action != NoOp {
		a.say("%s: %s Service %s → generation %s", sp.Addr, verb(service.Action), r.Name, r.Hash)
		if _, err := c.apply(ctx, service.Patch, false, service.Force); err != nil {
			return fmt.Errorf("switching Service %s: %w; generation %s runs but does not serve%s", r.Name, err, r.Hash, a.stillServes(sp))
		}
	}
	if len(retire) > 0 {
		a.say("%s: deleting the previous generation %s", sp.Addr, sp.Old)
		if err := a.deleteObjects(ctx, retire, false); err != nil {
			return fmt.Errorf("the new generation serves, but deleting the old one failed: %w (it holds its GPUs; run apply again)", err)
		}
	}
	a.say("%s: done (generation %s)", sp.Addr, r.Hash)
	return nil
}

func verb(a Action) string {
	switch a {
	case Create:
		return "creating"
	case Update:
		return "updating"
	case Delete:
		return "deleting"
	}
	return string(a)
}

// stillServes says what serves after a failure.
func (a *Applier) stillServes(sp *ServerPlan) string {
	switch sp.Action {
	case CreateThenDelete:
		return fmt.Sprintf("; the previous generation %s keeps serving through Service %s", sp.Old, sp.Name)
	case DeleteThenCreate:
		return fmt.Sprintf("; the previous generation %s was already deleted: nothing serves %s", sp.Old, sp.Addr)
	case Create:
		return "; nothing of the server is left on the cluster"
	}
	return ""
}

// cleanup deletes a new generation that failed; the Service is untouched.
func (a *Applier) cleanup(ctx context.Context, sp *ServerPlan, objs ...*ObjectChange) {
	var del []*ObjectChange
	for _, o := range objs {
		if o != nil {
			del = append(del, &ObjectChange{Kind: o.Kind, Name: o.Name, Action: Delete})
		}
	}
	a.say("%s: deleting the failed generation %s", sp.Addr, sp.Rendered.Workload.GetName())
	// Waits until it is gone: its pods free their GPUs, and the next plan
	// must not take a generation in deletion for the serving one.
	if err := a.deleteObjects(context.WithoutCancel(ctx), del, true); err != nil {
		a.say("%s: deleting the failed generation: %v (delete it with roofline destroy or kubectl)", sp.Addr, err)
	}
}

// deleteObjects deletes objects (workloads in the foreground, so that their
// pods go with them); wait also waits until the workloads and their pods
// are gone, which destroy-first needs to free the GPUs.
func (a *Applier) deleteObjects(ctx context.Context, objs []*ObjectChange, wait bool) error {
	c := a.Client
	fg := metav1.DeletePropagationForeground
	var errs []error
	for _, o := range objs {
		opts := metav1.DeleteOptions{PropagationPolicy: &fg}
		if o.UID != "" {
			uid := o.UID
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err := c.Dynamic.Resource(gvrOf(o.Kind)).Namespace(c.Namespace).Delete(ctx, o.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", o.Kind, o.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil || !wait {
		return err
	}
	deadline := time.Now().Add(a.timeout(0))
	for _, o := range objs {
		if o.Kind == "Service" {
			continue
		}
		for {
			_, err := c.Dynamic.Resource(gvrOf(o.Kind)).Namespace(c.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s %s is still there after %s (finalizers or pods that do not terminate)", o.Kind, o.Name, a.timeout(0))
			}
			if err := sleep(ctx, a.poll()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *Applier) poll() time.Duration {
	if a.Poll > 0 {
		return a.Poll
	}
	return 2 * time.Second
}

func (a *Applier) timeout(budget time.Duration) time.Duration {
	t := a.Timeout
	if t <= 0 {
		t = 2 * time.Minute
	}
	return budget + t
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitReady waits until every replica of the generation is ready, printing
// progress when it changes, and fails early on a crash loop.
func (a *Applier) waitReady(ctx context.Context, sp *ServerPlan, r *kube.Rendered) error {
	c := a.Client
	gvr := gvrOf(r.Workload.GetKind())
	deadline := time.Now().Add(a.timeout(r.StartupBudget))
	last := ""
	for {
		obj, err := c.Dynamic.Resource(gvr).Namespace(c.Namespace).Get(ctx, r.Workload.GetName(), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", r.Workload.GetKind(), r.Workload.GetName(), err)
		}
		rd := readinessOf(obj)
		line := rd.detail
		if !rd.done {
			if pods, err := c.podsOf(ctx, r.Name, r.Hash); err == nil {
				crash, pending := c.podTrouble(ctx, pods)
				if crash != "" {
					return fmt.Errorf("%s %s does not start: %s", r.Workload.GetKind(), r.Workload.GetName(), crash)
				}
				if pending != "" {
					line += "; " + pending
				}
			}
		}
		if line != last {
			a.say("%s: %s %s: %s", sp.Addr, r.Workload.GetKind(), r.Workload.GetName(), line)
			last = line
		}
		if rd.done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s not ready after %s: %s", r.Workload.GetKind(), r.Workload.GetName(), a.timeout(r.StartupBudget), line)
		}
		if err := sleep(ctx, a.poll()); err != nil {
			return err
		}
	}
}

// gate resolves the generation's Service and runs the gates through it.
func (a *Applier) gate(ctx context.Context, sp *ServerPlan, service string) error {
	if a.Resolve == nil {
		return fmt.Errorf("no way to reach Service %s from here", service)
	}
	svc, err := a.Client.Typed.CoreV1().Services(a.Client.Namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return err
	}
	base, stop, err := a.Resolve.Resolve(ctx, svc)
	if err != nil {
		return fmt.Errorf("reaching Service %s: %w", service, err)
	}
	defer stop()
	a.say("%s: gates through Service %s (%s)", sp.Addr, service, base)
	return a.Gate(ctx, sp.Addr, base)
}

// Destroy deletes every object roofline made for the named servers (all of
// them when names is empty) and waits until they and their pods are gone.
func (a *Applier) Destroy(ctx context.Context, p *Plan) error {
	var errs []error
	for _, sp := range p.Servers {
		if sp.Action != Delete {
			continue
		}
		a.say("%s: deleting %d object(s)", sp.Addr, len(sp.Objects))
		if err := a.deleteObjects(ctx, sp.Objects, true); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sp.Addr, err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what still carries roofline's labels in the namespace
// (workloads, Services, pods), for destroy's final check.
func (c *Client) Leftovers(ctx context.Context) ([]string, error) {
	var out []string
	lws, err := c.lwsInstalled(ctx)
	if err != nil {
		return nil, err
	}
	kinds := []string{"Deployment", "Service"}
	if lws {
		kinds = append(kinds, "LeaderWorkerSet")
	}
	for _, kind := range kinds {
		list, err := c.Dynamic.Resource(gvrOf(kind)).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managedSelector("")})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			out = append(out, kind+"/"+o.GetName())
		}
	}
	pods, err := c.podsOf(ctx, "", "")
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		out = append(out, "Pod/"+p.Name)
	}
	return out, nil
}
