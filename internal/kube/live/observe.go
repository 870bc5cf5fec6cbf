package live

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// logTailLines is how much of a crashed engine's log the classifier reads.
const logTailLines = 400

// readiness is how far a workload's rollout got.
type readiness struct {
	want, ready int64
	done        bool   // every replica of the current spec is ready
	detail      string // for people
}

// readinessOf reads a Deployment's or LeaderWorkerSet's status.
func readinessOf(obj *unstructured.Unstructured) readiness {
	want, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	updated, _, _ := unstructured.NestedInt64(obj.Object, "status", "updatedReplicas")
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	r := readiness{want: want, ready: ready}
	switch obj.GetKind() {
	case "Deployment":
		avail, _, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas")
		r.done = observed >= obj.GetGeneration() && updated == want && ready == want && avail == want
	default: // LeaderWorkerSet: a replica is a group, ready when all its pods are
		r.done = ready == want && conditionTrue(obj, "Available")
	}
	r.detail = fmt.Sprintf("%d/%d replicas ready", ready, want)
	return r
}

func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// podTrouble is what the pods of one generation say is wrong: a crash loop
// (with the classified cause from the log) or pods that cannot be scheduled.
func (c *Client) podTrouble(ctx context.Context, pods []corev1.Pod) (crash string, pending string) {
	for i := range pods {
		p := &pods[i]
		for _, cs := range p.Status.ContainerStatuses {
			w := cs.State.Waiting
			if w == nil || w.Reason != "CrashLoopBackOff" {
				continue
			}
			crash = fmt.Sprintf("pod %s is crash-looping (%d restarts)", p.Name, cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				crash += fmt.Sprintf("; last exit code %d (%s)", t.ExitCode, t.Reason)
			}
			if d := c.classify(ctx, p, cs.Name); d != "" {
				crash += "; " + d
			}
			return crash, ""
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				pending = fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, cond.Message)
			}
		}
	}
	return "", pending
}

// classify reads the previous container's log tail and names the cause the
// way roofline does on a host. A log that cannot be read says nothing.
func (c *Client) classify(ctx context.Context, p *corev1.Pod, container string) string {
	tail := int64(logTailLines)
	raw, err := c.Typed.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Previous: true, TailLines: &tail}).DoRaw(ctx)
	if err != nil || len(raw) == 0 {
		return ""
	}
	d := engine.LogsOf("").Classify(raw) // the pod does not say its kind: every kind's rules
	if d.Class == "" || d.Class == "unknown" {
		return ""
	}
	return fmt.Sprintf("%s: %s %s", d.Title, d.Cause, d.Action)
}

// podsOf lists the pods of one server's generation.
func (c *Client) podsOf(ctx context.Context, server, hash string) ([]corev1.Pod, error) {
	sel := managedSelector(server)
	if hash != "" {
		sel += "," + kube.LabelConfigHash + "=" + hash
	}
	list, err := c.Typed.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// handEdits lists the managers other than roofline and the cluster's own
// controllers that wrote a workload's spec: kubectl edit, patch, scale.
func handEdits(obj *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == kube.FieldManager || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		if !strings.Contains(mf.FieldsV1.GetRawString(), `"f:spec"`) {
			continue
		}
		if strings.HasPrefix(mf.Manager, "kube-") || strings.HasSuffix(mf.Manager, "-controller") {
			continue // the cluster's controllers
		}
		when := ""
		if mf.Time != nil {
			when = " at " + mf.Time.UTC().Format("2006-01-02 15:04:05")
		}
		out = append(out, fmt.Sprintf("%s (%s%s)", mf.Manager, mf.Operation, when))
	}
	sort.Strings(out)
	return out
}

// observe reports what changed on the cluster outside roofline for each
// server that has a serving generation: replicas not ready, crash loops
// with their cause, specs edited by hand.
func (c *Client) observe(ctx context.Context, p *Plan, live map[string]*liveServer) {
	for _, name := range sortedKeys(live) {
		ls := live[name]
		addr := ls.addr
		if addr == "" {
			addr = "server." + name
		}
		hash := ""
		if ls.service != nil {
			sel, _, _ := unstructured.NestedStringMap(ls.service.Object, "spec", "selector")
			hash = sel[kube.LabelConfigHash]
		}
		w := ls.workloads[hash]
		if w == nil {
			if ls.service != nil && len(ls.workloads) > 0 {
				p.Drift = append(p.Drift, &Drift{Addr: addr, Summary: "the Service selects no generation", Detail: fmt.Sprintf("Service %s selects config hash %q, which no workload has", ls.service.GetName(), hash)})
			}
			continue
		}
		if edits := handEdits(w); len(edits) > 0 {
			p.Drift = append(p.Drift, &Drift{Addr: addr, Summary: w.GetKind() + " " + w.GetName() + " was edited by hand",
				Detail: "its spec has fields written by " + strings.Join(edits, ", ")})
		}
		rd := readinessOf(w)
		if rd.done {
			continue
		}
		pods, err := c.podsOf(ctx, name, hash)
		detail := rd.detail
		if err == nil {
			crash, pending := c.podTrouble(ctx, pods)
			switch {
			case crash != "":
				p.Drift = append(p.Drift, &Drift{Addr: addr, Summary: "crash-looping", Detail: crash})
				continue
			case pending != "":
				detail += "; " + pending
			}
		}
		p.Drift = append(p.Drift, &Drift{Addr: addr, Summary: "replicas not ready", Detail: detail})
	}
}
