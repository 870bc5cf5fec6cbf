package live

import (
	"errors"
	"fmt"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/kube/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func node(name string, free, alloc int64) *nodeGPUs {
	return &nodeGPUs{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, free: free, allocatable: alloc}
}

// TestPlace: pods go best fit, the way a bin-packing scheduler fills nodes,
// and what does not fit is counted.
func TestPlace(t *testing.T) {
	for _, c := range []struct {
		free      []int64
		pods      int
		per       int64
		placed    int
		freeAfter string
	}{
		{[]int64{8, 8}, 2, 4, 2, "[0 8]"},
		{[]int64{8, 4}, 1, 4, 1, "[8 0]"}, // the fuller node that fits
		{[]int64{4, 4}, 1, 8, 0, "[4 4]"}, // 8 free GPUs, but on no one node
		{[]int64{8, 8}, 3, 8, 2, "[0 0]"},
		{nil, 1, 1, 0, "[]"},
	} {
		var nodes []*nodeGPUs
		for i, f := range c.free {
			nodes = append(nodes, node(fmt.Sprint(i), f, 8))
		}
		got := place(nodes, c.pods, c.per)
		var after []int64
		for _, n := range nodes {
			after = append(after, n.free)
		}
		if got != c.placed || fmt.Sprint(after) != c.freeAfter && !(len(after) == 0 && c.freeAfter == "[]") {
			t.Errorf("place(%v, %d × %d) = %d, free after %v; want %d, %s", c.free, c.pods, c.per, got, after, c.placed, c.freeAfter)
		}
	}
}

func TestEligible(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	gpuTaint := []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
	cl := &config.Cluster{NodeSelector: map[string]string{"pool": "a"}}
	tolerant := &config.Cluster{NodeSelector: map[string]string{"pool": "a"}, Tolerations: []config.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists"}}}
	mk := func(labels map[string]string, conds []corev1.NodeCondition, taints []corev1.Taint, unsched bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.NodeSpec{Taints: taints, Unschedulable: unsched}, Status: corev1.NodeStatus{Conditions: conds}}
	}
	for _, c := range []struct {
		name string
		n    *corev1.Node
		cl   *config.Cluster
		want bool
	}{
		{"ready and selected", mk(map[string]string{"pool": "a"}, ready, nil, false), cl, true},
		{"not ready", mk(map[string]string{"pool": "a"}, nil, nil, false), cl, false},
		{"other pool", mk(map[string]string{"pool": "b"}, ready, nil, false), cl, false},
		{"cordoned", mk(map[string]string{"pool": "a"}, ready, nil, true), cl, false},
		{"tainted", mk(map[string]string{"pool": "a"}, ready, gpuTaint, false), cl, false},
		{"taint tolerated", mk(map[string]string{"pool": "a"}, ready, gpuTaint, false), tolerant, true},
	} {
		if got := eligible(c.n, c.cl); got != c.want {
			t.Errorf("%s: eligible = %v", c.name, got)
		}
	}
}

// TestGFDGPU: GPU Feature Discovery's labels give the GPU the VRAM fit
// uses; a known product takes roofline's preset with its CUDA total.
func TestGFDGPU(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: kubetest.H100Labels("x", 8)}}
	g, ok := gfdGPU(n)
	if !ok || g.Name != "NVIDIA H100 80GB HBM3" || g.MemoryTotalBytes != 81559<<20 || g.CUDATotalBytes() >= g.MemoryTotalBytes || g.ComputeCapability != "9.0" {
		t.Errorf("H100 from GFD: %+v ok=%v", g, ok)
	}
	n.Labels["nvidia.com/gpu.product"] = "Some-Future-GPU"
	n.Labels["nvidia.com/gpu.memory"] = "200000"
	if g, ok := gfdGPU(n); !ok || g.Name != "Some Future GPU" || g.MemoryTotalBytes != 200000<<20 {
		t.Errorf("unknown GPU from GFD: %+v", g)
	}
	delete(n.Labels, "nvidia.com/gpu.memory")
	if _, ok := gfdGPU(n); ok {
		t.Error("a node without the memory label gave a GPU")
	}
}

func TestReplicasIn(t *testing.T) {
	diff := "@@ -1 +1 @@\n-  replicas: 2\n+  replicas: 3\n"
	if got := replicasIn(diff, "-"); got != 2 {
		t.Errorf("before = %d", got)
	}
	if got := replicasIn(diff, "+"); got != 3 {
		t.Errorf("after = %d", got)
	}
	if got := replicasIn("", "-"); got != -1 {
		t.Errorf("none = %d", got)
	}
}

// TestConflictManagers: kubectl's managers are hand edits (drift, taken
// back); any other manager's fields are conflicts, never overwritten.
func TestConflictManagers(t *testing.T) {
	err := &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonConflict, Code: 409, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.replicas", Message: `conflict with "kubectl-edit" using apps/v1`},
		{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.template.spec.containers[name=\"engine\"].image", Message: `conflict with "argocd-controller" using apps/v1`},
	}}}}
	human, other := conflictManagers(err)
	if len(human) != 1 || len(other) != 1 || human[0] != `.spec.replicas is owned by "kubectl-edit" using apps/v1` {
		t.Errorf("human %q, other %q", human, other)
	}
	if _, other := conflictManagers(errors.New("plain")); len(other) != 1 {
		t.Errorf("an error without causes: %q", other)
	}
}

func TestReadiness(t *testing.T) {
	dep := func(gen, observed, want, ready, updated, avail int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"spec":   map[string]any{"replicas": want},
			"status": map[string]any{"observedGeneration": observed, "readyReplicas": ready, "updatedReplicas": updated, "availableReplicas": avail},
		}}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		u.SetGeneration(gen)
		return u
	}
	for _, c := range []struct {
		u    *unstructured.Unstructured
		done bool
	}{
		{dep(1, 1, 2, 2, 2, 2), true},
		{dep(2, 1, 2, 2, 2, 2), false}, // the controller has not seen the new spec
		{dep(1, 1, 2, 1, 2, 1), false},
	} {
		if got := readinessOf(c.u).done; got != c.done {
			t.Errorf("%v: done = %v", c.u.Object, got)
		}
	}
	lws := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1)},
		"status": map[string]any{"readyReplicas": int64(1), "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}}}
	lws.SetKind("LeaderWorkerSet")
	if !readinessOf(lws).done {
		t.Error("an available LWS is not done")
	}
}

func TestHandEdits(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "roofline", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
	})
	got := handEdits(u)
	if len(got) != 1 || got[0][:len("kubectl-edit")] != "kubectl-edit" {
		t.Errorf("handEdits = %q", got)
	}
}
