package live

import (
	"context"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
)

// TestObserveCrashLoop: a serving generation whose pod crash-loops is
// drift that names the pod, its restarts and its last exit; one whose pod
// cannot be scheduled says why.
func TestObserveCrashLoop(t *testing.T) {
	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelServer: "chat", kube.LabelConfigHash: "abc"}
	crashing := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chat-abc-1", Namespace: "ns", Labels: labels},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "engine", RestartCount: 7,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		}}},
	}
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chat-abc-2", Namespace: "ns", Labels: labels},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}},
	}
	workload := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"spec":   map[string]any{"replicas": int64(2)},
			"status": map[string]any{"readyReplicas": int64(0)},
		}}
		u.SetKind("Deployment")
		u.SetName("chat-abc")
		return u
	}
	svc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"selector": map[string]any{kube.LabelConfigHash: "abc"}}}}
	for _, c := range []struct {
		name    string
		pods    []*corev1.Pod
		summary string
		detail  []string
	}{
		{"crash loop", []*corev1.Pod{crashing, pending}, "crash-looping", []string{"pod chat-abc-1 is crash-looping (7 restarts)", "last exit code 1 (Error)"}},
		{"unschedulable", []*corev1.Pod{pending}, "replicas not ready", []string{"0/2 replicas ready", "pod chat-abc-2 cannot be scheduled: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}},
	} {
		cs := fake.NewClientset()
		for _, p := range c.pods {
			if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cl := &Client{Typed: cs, Namespace: "ns", Cluster: "lab"}
		p := &Plan{}
		live := map[string]*liveServer{"chat": {name: "chat", addr: "server.chat", service: svc,
			workloads: map[string]*unstructured.Unstructured{"abc": workload()}}}
		cl.observe(context.Background(), p, live)
		if len(p.Drift) != 1 || p.Drift[0].Summary != c.summary || p.Drift[0].Addr != "server.chat" {
			t.Fatalf("%s: drift %+v", c.name, p.Drift)
		}
		for _, want := range c.detail {
			if !strings.Contains(p.Drift[0].Detail, want) {
				t.Errorf("%s: drift detail %q lacks %q", c.name, p.Drift[0].Detail, want)
			}
		}
	}
}
